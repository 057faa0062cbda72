# The Open MPI settings the MPI tests run with (sourced): one machine, in a container, as root.
#   mpi_flags    mpirun's flags: more ranks than cores allowed (3 ranks on 2 cores), ranks not
#                pinned to cores (tests run side by side on a shared machine), and root allowed
#                (CI runs as root; mpirun refuses it otherwise)
#   OMPI_MCA_*   shared memory between the ranks, no network transport or interface discovery
#                (mpirun talks to its ranks over loopback), no single-copy (CMA) transfers,
#                which need ptrace rights that containers often withhold
mpi_flags=(--oversubscribe --bind-to none --allow-run-as-root)
export OMPI_MCA_btl=self,vader
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_oob_tcp_if_include=lo
export OMPI_MCA_pml=ob1
