// Files (thin): position tables as files, resizing, and tensor files as numpy arrays.
//
// Tensors are numpy views of the file's bytes in their own dtype (float16, float32, float64,
// the integers, bool), without a copy: the arrays keep their TensorFile (and its mapping) alive.
// BF16 tensors, which numpy has no type for, come as float32 copies (exact).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "arrays.hpp"
#include "bindings.hpp"
#include "posemb/npy.hpp"
#include "posemb/position_table_file.hpp"
#include "posemb/resize.hpp"
#include "posemb/safetensors.hpp"
#include "posemb/table_provenance.hpp"
#include "posemb/tensor_file.hpp"

namespace posemb::python {
namespace {

// The numpy dtype a tensor's bytes are read as, or None for BF16 and the 8-bit floats (numpy
// has no such types).
std::optional<py::dtype> numpy_dtype(DType d) {
  switch (d) {
    case DType::F16:
      return py::dtype("float16");
    case DType::F32:
      return dtype_of<float>();
    case DType::F64:
      return dtype_of<double>();
    case DType::BOOL:
      return dtype_of<bool>();
    case DType::U8:
      return dtype_of<std::uint8_t>();
    case DType::I8:
      return dtype_of<std::int8_t>();
    case DType::I16:
      return dtype_of<std::int16_t>();
    case DType::U16:
      return dtype_of<std::uint16_t>();
    case DType::I32:
      return dtype_of<std::int32_t>();
    case DType::U32:
      return dtype_of<std::uint32_t>();
    case DType::I64:
      return dtype_of<std::int64_t>();
    case DType::U64:
      return dtype_of<std::uint64_t>();
    default:
      return std::nullopt;
  }
}

// A tensor's values as a read-only numpy array: a view of its bytes (the file's mapping, kept
// alive by owner) for every dtype numpy has; BF16 widened to a float32 copy (exact).
py::array tensor_array(const Tensor& t, py::handle owner, const char* op) {
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  py::array a;
  if (const auto dt = numpy_dtype(t.dtype())) {
    a = py::array(*dt, shape, {}, t.bytes().data(), owner);
  } else if (t.dtype() == DType::BF16) {
    const Tensor wide = t.astype(DType::F32);
    py::array copy(dtype_of<float>(), shape);
    std::memcpy(copy.mutable_data(), wide.bytes().data(), wide.bytes().size());
    a = copy;
  } else {
    throw py::type_error(std::string(op) + ": tensor '" + t.name() + "' has dtype " +
                         std::string(dtype_name(t.dtype())) +
                         ", which numpy has no type for (8-bit floats)");
  }
  a.attr("setflags")(py::arg("write") = false);
  return a;
}

// The DType of a numpy array's elements; TypeError naming op for other dtypes.
DType tensor_dtype(const py::array& a, const std::string& name, const char* op) {
  for (const DType d : {DType::F32, DType::F64, DType::F16, DType::BOOL, DType::U8, DType::I8,
                        DType::I16, DType::U16, DType::I32, DType::U32, DType::I64, DType::U64}) {
    if (a.dtype().equal(*numpy_dtype(d))) return d;
  }
  const std::string subject = name.empty() ? "array" : "'" + name + "'";  // write_npy: no name
  throw py::type_error(std::string(op) + ": " + subject +
                       " must be a float, integer or bool array, got " + dtype_name(a));
}

// A C-order array as a Tensor to write (a copy of its bytes).
Tensor tensor_from(const std::string& name, const py::array& a, const char* op) {
  if (!(a.flags() & py::array::c_style)) {
    const std::string subject = name.empty() ? "array" : "'" + name + "'";
    throw py::value_error(std::string(op) + ": " + subject +
                          " is not C-contiguous; pass np.ascontiguousarray(...)");
  }
  const DType dt = tensor_dtype(a, name, op);
  std::vector<std::uint64_t> shape(a.shape(), a.shape() + a.ndim());
  const auto* p = static_cast<const std::byte*>(a.data());
  return Tensor::from_bytes(name, dt, std::move(shape),
                            std::span<const std::byte>(p, static_cast<std::size_t>(a.nbytes())));
}

// A resize as a dict of its fields (None where a field does not apply).
py::dict resize_dict(const TableResize& r) {
  py::dict d;
  d["operation"] = r.operation;
  d["method"] = r.method;
  d["from_positions"] = r.from_positions;
  d["to_positions"] = r.to_positions;
  d["reserved_rows"] = r.reserved_rows;
  d["source_file"] = r.source_file;
  d["source_tensor"] = r.source_tensor;
  d["initializer"] = r.initializer.empty() ? py::object(py::none()) : py::str(r.initializer);
  d["stddev"] = r.stddev ? py::object(py::float_(*r.stddev)) : py::object(py::none());
  d["seed"] = r.seed ? py::object(py::int_(*r.seed)) : py::object(py::none());
  d["scale"] = r.scale ? py::object(py::float_(*r.scale)) : py::object(py::none());
  return d;
}

py::list resize_dicts(const std::vector<TableResize>& resizes) {
  py::list l;
  for (const TableResize& r : resizes) l.append(resize_dict(r));
  return l;
}

// reserved_rows past the table's rows would make positions() wrap (rows - reserved).
void check_reserved_rows(const char* op, std::size_t reserved, std::size_t rows) {
  if (reserved > rows) {
    throw py::value_error(std::string(op) + ": reserved_rows " + std::to_string(reserved) +
                          " exceeds the table's " + std::to_string(rows) + " rows");
  }
}

std::optional<DType> optional_dtype(const std::optional<std::string>& name) {
  if (!name) return std::nullopt;
  return parse_float_dtype(*name);
}

}  // namespace

void bind_files(py::module_& m) {
  py::class_<PositionTable>(m, "PositionTable", R"(A position table and what is known about it.

`values` is the (reserved_rows + positions, dim) float32 table, a writable view (no copy) that
keeps this object alive; `usable()` the rows that are positions (position p is row
reserved_rows + p). Made by load_position_table and resize_table, or from an array (copied).)")
      .def(py::init([](const py::array& values, std::size_t reserved_rows,
                       std::optional<std::size_t> training_length, std::string source_tensor) {
             PositionTable t;
             t.values = Matrix<float>(matrix_in<float>(values, "PositionTable", "values"));
             check_reserved_rows("PositionTable", reserved_rows, t.values.rows());
             t.reserved_rows = reserved_rows;
             t.training_length = training_length;
             t.source_tensor = std::move(source_tensor);
             return t;
           }),
           py::arg("values"), py::arg("reserved_rows") = 0, py::arg("training_length") = py::none(),
           py::arg("source_tensor") = "")
      .def_property_readonly("values",
                             [](py::object self) {
                               return array_over(self.cast<PositionTable&>().values.view(), self,
                                                 true);
                             })
      .def("usable",
           [](py::object self) {
             return array_over(self.cast<const PositionTable&>().usable(), self, false);
           })
      .def_property_readonly("positions", &PositionTable::positions)
      .def_property(
          "reserved_rows", [](const PositionTable& t) { return t.reserved_rows; },
          [](PositionTable& t, std::size_t rows) {
            check_reserved_rows("PositionTable.reserved_rows", rows, t.values.rows());
            t.reserved_rows = rows;
          },
          "Leading rows that are not positions; at most the table's rows (ValueError past them).")
      .def_readwrite("training_length", &PositionTable::training_length)
      .def_readwrite("initializer", &PositionTable::initializer)
      .def_readwrite("provenance", &PositionTable::provenance)
      .def_property_readonly(
          "resizes", [](const PositionTable& t) { return resize_dicts(t.resizes); },
          R"(Its resizes, oldest first, as dicts: operation, method, from_positions, to_positions,
reserved_rows, source_file, source_tensor, and initializer, stddev, seed (random) or scale
(sinusoidal), None where they do not apply.)")
      .def_readwrite("source_file", &PositionTable::source_file)
      .def_readwrite("source_tensor", &PositionTable::source_tensor)
      .def_readwrite("how_found", &PositionTable::how_found)
      .def_property(
          "dtype", [](const PositionTable& t) { return std::string(dtype_name(t.dtype)); },
          [](PositionTable& t, const std::string& name) { t.dtype = parse_float_dtype(name); },
          "The dtype it was stored in, as safetensors spells it (\"F32\", \"BF16\", ...).");

  m.def(
      "load_position_table",
      [](const std::string& path, const std::optional<std::string>& tensor_name) {
        return without_gil([&] { return posemb::load_position_table(path, tensor_name); });
      },
      py::arg("path"), py::arg("tensor_name") = py::none(),
      R"(The position table of a .safetensors or .npy file: by tensor_name, else the file's
posemb.tensor metadata, else the common names (wpe.weight, *embeddings.position_embeddings.weight,
...). Raises FileFormatError (a ValueError naming the file) for a malformed file, no match or
several matches.)");

  m.def(
      "save_position_table",
      [](const std::string& path, const PositionTable& table,
         const std::optional<std::string>& dtype) {
        const std::optional<DType> dt = optional_dtype(dtype);
        without_gil([&] { posemb::save_position_table(path, table, dt); });
      },
      py::arg("path"), py::arg("table"), py::arg("dtype") = py::none(),
      R"(Saves table atomically: .npy (every row, reserved ones included, no metadata) or safetensors
with posemb's metadata. dtype: "f32", "f64", "f16", "bf16" (default: the table's dtype).)");

  m.def(
      "resize_table",
      [](const PositionTable& table, std::size_t new_positions, const std::string& method,
         const std::string& initializer, double stddev, std::uint64_t seed) {
        const ResizeMethod how = parse_resize_method(method);
        const ResizeOptions options{initializer, stddev, seed};
        return without_gil(
            [&] { return posemb::resize_table(table, new_positions, how, options); });
      },
      py::arg("table"), py::arg("new_positions"), py::arg("method"),
      py::arg("initializer") = "normal", py::arg("stddev") = 0.02, py::arg("seed") = 0,
      R"(A new table with new_positions positions (reserved rows kept in addition). method:
"copy", "interpolate", "random" (new rows from initializer, seeded) grow; "truncate" shrinks.)");

  m.def(
      "recorded_resizes",
      [](const Metadata& metadata, const std::string& path) {
        return resize_dicts(posemb::recorded_resizes(metadata, path));
      },
      py::arg("metadata"), py::arg("path") = "",
      R"(The resizes a file's metadata records (posemb.resizes, or for a file written before it
existed the "resize: ..." parts of posemb.provenance), as PositionTable.resizes gives them.
Raises FileFormatError naming path when posemb.resizes is malformed.)");

  py::class_<TensorFile, std::shared_ptr<TensorFile>>(m, "TensorFile", R"(The tensors of a file.

`f[name]` is a read-only numpy array of the tensor in its own dtype (float16, float32, float64,
integers, bool), a view of the file's bytes without a copy that keeps the file object alive;
BF16 tensors come as float32 copies (numpy has no bfloat16).

Known limit: a file over 1 MiB is mapped, not read; if another process truncates it while
arrays of it are alive, touching them raises SIGBUS (as with numpy.memmap), which Python cannot
catch. Copy what you keep (np.array(f[name])) when the file may change. Files up to 1 MiB are
read into memory and are not affected.)")
      .def_property_readonly("names",
                             [](const TensorFile& f) {
                               std::vector<std::string> names;
                               for (const Tensor& t : f.tensors) names.push_back(t.name());
                               return names;
                             })
      .def_readonly("metadata", &TensorFile::metadata)
      .def(
          "dtype",
          [](const TensorFile& f, const std::string& name) {
            return std::string(dtype_name(f.at(name).dtype()));
          },
          py::arg("name"))
      .def(
          "shape",
          [](const TensorFile& f, const std::string& name) {
            const auto& s = f.at(name).shape();
            return std::vector<std::uint64_t>(s.begin(), s.end());
          },
          py::arg("name"))
      .def("__len__", [](const TensorFile& f) { return f.tensors.size(); })
      .def(
          "__contains__",
          [](const TensorFile& f, const std::string& name) { return f.find(name) != nullptr; },
          py::arg("name"))
      .def(
          "__getitem__",
          [](py::object self, const std::string& name) {
            const Tensor& t = self.cast<const TensorFile&>().at(name);
            return tensor_array(t, self, "TensorFile");
          },
          py::arg("name"));

  m.def(
      "read_safetensors",
      [](const std::string& path) {
        return std::make_shared<TensorFile>(
            without_gil([&] { return posemb::read_safetensors(path); }));
      },
      py::arg("path"),
      "Every tensor and the metadata of a .safetensors file, validated before any value is read. "
      "Files over 1 MiB are mapped: see TensorFile for the one known limit (SIGBUS when another "
      "process truncates the file while its arrays are alive).");

  m.def(
      "read_npy",
      [](const std::string& path) {
        auto f = std::make_shared<TensorFile>();
        f->tensors.push_back(without_gil([&] { return posemb::read_npy(path); }));
        py::object owner = py::cast(f);
        return tensor_array(f->tensors.front(), owner, "read_npy");
      },
      py::arg("path"),
      "The array of a .npy file, read-only, in C order and little-endian: a view of the file "
      "(mapped when over 1 MiB: see TensorFile for the SIGBUS limit), or for a file in Fortran "
      "order or big-endian, a copy decoded as np.load reads it.");

  m.def(
      "write_safetensors",
      [](const std::string& path, const py::dict& tensors,
         const std::map<std::string, std::string>& metadata,
         const std::optional<std::string>& dtype) {
        constexpr const char* op = "write_safetensors";
        std::vector<Tensor> ts;
        for (const auto& [name, array] : tensors) {
          if (!py::isinstance<py::str>(name)) {
            throw py::type_error(
                std::string(op) + ": tensors must map str names to arrays, got the " +
                py::str(py::type::of(name).attr("__name__")).cast<std::string>() + " " +
                py::repr(name).cast<std::string>().substr(0, 80) + " as a name");
          }
          ts.push_back(tensor_from(py::cast<std::string>(name), py::cast<py::array>(array), op));
        }
        const std::optional<DType> dt = optional_dtype(dtype);
        without_gil([&] { posemb::write_safetensors(path, ts, metadata, dt); });
      },
      py::arg("path"), py::arg("tensors"),
      py::arg("metadata") = std::map<std::string, std::string>{}, py::arg("dtype") = py::none(),
      R"(Writes {name: array} (float, integer or bool arrays, C order, in dict order) and string
metadata atomically; dtype ("f32", "f64", "f16", "bf16") converts every float tensor, rounding to
nearest even.)");

  m.def(
      "write_npy",
      [](const std::string& path, const py::array& array) {
        const Tensor t = tensor_from("", array, "write_npy");
        without_gil([&] { posemb::write_npy(path, t); });
      },
      py::arg("path"), py::arg("array"),
      "Writes a C-order array (float, integer or bool) as .npy, atomically.");
}

}  // namespace posemb::python
