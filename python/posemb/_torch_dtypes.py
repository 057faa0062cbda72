"""dtypes of posemb.torch's tables: the kernels compute in float32; these helpers give results
in the tables' own dtype (float16, bfloat16, float64), see in_table_dtype."""
import torch

TABLE_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


def table_dtype(op, **tables):
    """The one dtype of the tables (TypeError for another dtype or for tables that differ)."""
    for name, t in tables.items():
        if t.dtype not in TABLE_DTYPES:
            raise TypeError(f"{op}: {name} must be a float32, float16, bfloat16 or float64 "
                            f"tensor, got {t.dtype}")
    dtypes = {t.dtype for t in tables.values()}
    if len(dtypes) > 1:
        raise TypeError(f"{op}: the tables must have one dtype, got " +
                        ", ".join(f"{n} {t.dtype}" for n, t in tables.items()))
    return dtypes.pop()


def float32_parts(op, table):
    """A float64 table as three float32 tables whose sum in float64 is the table exactly (for
    values in float32's normal range): the first is table.float() and carries the gradient, the
    other two are constants. An infinity or a NaN is the first part alone (the others 0 there,
    not inf - inf); a finite value that float32 would round to infinity is a ValueError."""
    high = table.float()
    exact = table.detach()
    finite = torch.isfinite(high)
    beyond = ~finite & torch.isfinite(exact)
    if beyond.any():
        where = [int(i) for i in beyond.nonzero()[0]]
        at = ", ".join(f"{n} {i}" for n, i in zip(("row", "column"), where))
        raise ValueError(f"{op}: a float64 table holds {float(exact[tuple(where)])!r} at {at}, "
                         "beyond float32's range (|x| > 3.4e38); posemb computes in float32")
    rest = (exact - high.detach().double()).masked_fill_(~finite, 0.0)
    middle = rest.float()
    return high, middle, (rest - middle.double()).float()


def in_table_dtype(op, compute, *tables):
    """compute(*tables) for tables of any of posemb.torch's dtypes, compute taking float32 tables
    and giving a float32 result through posemb's kernels (a linear function of the tables).

    float16, bfloat16: the tables widened to float32 (exactly), the result rounded once to their
    dtype; autograd's casts carry the gradient back, widened and then rounded to the dtype.
    float64: each table as three exact float32 parts (float32_parts), the other tables zero,
    summed in float64: the forward equals the float64 formula exactly; the gradient is computed
    in float32 (the kernels' precision) and returned in float64."""
    dtype = tables[0].dtype
    if dtype == torch.float32:
        return compute(*tables)
    if dtype != torch.float64:
        return compute(*(t.float() for t in tables)).to(dtype)
    total = None
    for i, table in enumerate(tables):
        zeros = [None if j == i else torch.zeros(t.shape) for j, t in enumerate(tables)]
        part_sum = None
        for part in float32_parts(op, table):
            y = compute(*(part if j == i else zeros[j] for j in range(len(tables)))).double()
            part_sum = y if part_sum is None else part_sum + y
        total = part_sum if total is None else total + part_sum
    return total
