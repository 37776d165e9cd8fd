// Python module realeasy_ros._realtime_lstm: the real-time Realeasy step (paper 000
// Algorithms 2-3) of realeasy_ros/realtime_lstm.hpp. Used through realeasy_ros.realtime.
//
// Arrays cross through the Python buffer protocol (PEP 3118), not pybind11's numpy layer:
// Debian 12's pybind11 2.10 predates NumPy 2's ABI and crashes on its dtype structures, while
// the buffer protocol is part of CPython and works with any NumPy.
//
// step(x, out) works on the caller's memory: both must be float64, C-contiguous, 1-D, of
// length input_size (out writeable). Anything else is a ValueError, never a silent copy
// (a converted copy of `out` would swallow the result).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <string>
#include <vector>

#include "realeasy_ros/realtime_lstm.hpp"

namespace py = pybind11;
using realeasy::RealtimeLstm;

namespace {

// True for the PEP 3118 format of a native float64 ("d", "@d", "=d", or "<d" on little endian).
bool is_float64(const char* format) {
  if (format == nullptr) return false;
  const bool little = [] {
    const int one = 1;
    return *reinterpret_cast<const char*>(&one) == 1;
  }();
  if (format[0] == '@' || format[0] == '=' || (format[0] == '<' && little)) ++format;
  return std::strcmp(format, "d") == 0;
}

std::string shape_text(const Py_buffer& view) {
  std::string text = "(";
  for (int d = 0; d < view.ndim; ++d) {
    text += (d ? ", " : "") + std::to_string(view.shape[d]);
  }
  return text + (view.ndim == 1 ? ",)" : ")");
}

// A held buffer view of a 1-D float64 C-contiguous vector of `size` values, or ValueError.
class VectorView {
 public:
  VectorView(const py::handle& obj, py::ssize_t size, const char* name, bool writeable) {
    if (PyObject_GetBuffer(obj.ptr(), &view_, PyBUF_RECORDS_RO) != 0) {
      PyErr_Clear();
      throw py::value_error(std::string(name) + " must be a float64 numpy array, got " +
                            std::string(py::str(py::type::handle_of(obj).attr("__name__"))));
    }
    held_ = true;
    if (!is_float64(view_.format)) {
      throw py::value_error(std::string(name) + " must be float64, got buffer format '" +
                            std::string(view_.format ? view_.format : "B") + "'");
    }
    if (view_.ndim != 1 || view_.shape[0] != size) {
      throw py::value_error(std::string(name) + " must have shape (" + std::to_string(size) +
                            ",), got " + shape_text(view_));
    }
    if (size > 1 && view_.strides[0] != static_cast<py::ssize_t>(sizeof(double))) {
      throw py::value_error(std::string(name) + " must be C-contiguous, got a stride of " +
                            std::to_string(view_.strides[0]) + " bytes");
    }
    if (writeable && view_.readonly) {
      throw py::value_error(std::string(name) + " must be writeable");
    }
  }
  ~VectorView() {
    if (held_) PyBuffer_Release(&view_);
  }
  VectorView(const VectorView&) = delete;
  VectorView& operator=(const VectorView&) = delete;

  double* data() const { return static_cast<double*>(view_.buf); }

 private:
  Py_buffer view_{};
  bool held_ = false;
};

// Copy of a float64 buffer of `ndim` dimensions (any strides) into an Eigen matrix.
RealtimeLstm::Matrix to_matrix(const py::buffer& buffer, int ndim, const std::string& name) {
  const py::buffer_info info = buffer.request();
  if (!is_float64(info.format.c_str())) {
    throw py::value_error(name + " must be float64, got buffer format '" + info.format + "'");
  }
  if (info.ndim != ndim) {
    throw py::value_error(name + " must have " + std::to_string(ndim) + " dimension(s), got " +
                          std::to_string(info.ndim));
  }
  const py::ssize_t rows = info.shape[0], cols = ndim == 2 ? info.shape[1] : 1;
  const py::ssize_t row_stride = info.strides[0], col_stride = ndim == 2 ? info.strides[1] : 0;
  RealtimeLstm::Matrix m(rows, cols);
  const char* base = static_cast<const char*>(info.ptr);
  for (py::ssize_t r = 0; r < rows; ++r) {
    for (py::ssize_t c = 0; c < cols; ++c) {
      std::memcpy(&m(r, c), base + r * row_stride + c * col_stride, sizeof(double));
    }
  }
  return m;
}

RealtimeLstm::Vector to_vector(const py::buffer& buffer, const std::string& name) {
  return to_matrix(buffer, 1, name).col(0);
}

std::vector<RealtimeLstm::Matrix> to_matrices(const std::vector<py::buffer>& buffers, int ndim,
                                              const std::string& name) {
  std::vector<RealtimeLstm::Matrix> out;
  for (std::size_t l = 0; l < buffers.size(); ++l) {
    out.push_back(to_matrix(buffers[l], ndim, name + "[" + std::to_string(l) + "]"));
  }
  return out;
}

std::vector<RealtimeLstm::Vector> to_vectors(const std::vector<py::buffer>& buffers,
                                             const std::string& name) {
  std::vector<RealtimeLstm::Vector> out;
  for (std::size_t l = 0; l < buffers.size(); ++l) {
    out.push_back(to_vector(buffers[l], name + "[" + std::to_string(l) + "]"));
  }
  return out;
}

// h_t^l (cell = false) or c_t^l (cell = true) of every layer, as nested lists (copies).
std::vector<std::vector<double>> layer_states(const RealtimeLstm& lstm, bool cell) {
  std::vector<std::vector<double>> states;
  for (int l = 0; l < lstm.num_layers(); ++l) {
    const auto v = cell ? lstm.c(l) : lstm.h(l);
    states.emplace_back(v.data(), v.data() + v.size());
  }
  return states;
}

}  // namespace

PYBIND11_MODULE(_realtime_lstm, m) {
  m.doc() = "Real-time Realeasy LSTM step in C++ (paper 000, Algorithms 2-3).";

  py::class_<RealtimeLstm>(m, "RealtimeLstm", R"doc(
One-step unidirectional LSTM stack + dense layer on physical joint states, carrying (h, c) of
every layer between calls (paper 000 Algorithms 2-3, eq. 2-7). Built from float64 arrays: the
weights of a torch nn.LSTM (gate order i, f, g, o) per layer, Linear(hidden -> features), and
the joint-limit scaler (lower, scale = upper - lower). ValueError for inconsistent shapes.)doc")
      .def(py::init(
               [](const std::vector<py::buffer>& weight_ih,
                  const std::vector<py::buffer>& weight_hh, const std::vector<py::buffer>& bias_ih,
                  const std::vector<py::buffer>& bias_hh, const py::buffer& dense_weight,
                  const py::buffer& dense_bias, const py::buffer& lower, const py::buffer& scale) {
                 return RealtimeLstm(to_matrices(weight_ih, 2, "weight_ih"),
                                     to_matrices(weight_hh, 2, "weight_hh"),
                                     to_vectors(bias_ih, "bias_ih"), to_vectors(bias_hh, "bias_hh"),
                                     to_matrix(dense_weight, 2, "dense_weight"),
                                     to_vector(dense_bias, "dense_bias"), to_vector(lower, "lower"),
                                     to_vector(scale, "scale"));
               }),
           py::arg("weight_ih"), py::arg("weight_hh"), py::arg("bias_ih"), py::arg("bias_hh"),
           py::arg("dense_weight"), py::arg("dense_bias"), py::arg("lower"), py::arg("scale"))
      .def(
          "step",
          [](RealtimeLstm& self, const py::handle& x, const py::handle& out) {
            const py::ssize_t size = self.input_size();
            const VectorView xv(x, size, "x", false);
            const VectorView ov(out, size, "out", true);
            self.step(xv.data(), ov.data());
          },
          py::arg("x"), py::arg("out"),
          "One step: physical state x -> physical residual written into out (both float64, "
          "C-contiguous, shape (input_size,); out may be x).")
      .def("reset", &RealtimeLstm::reset, "Zero h and c of every layer (Algorithm 2 line 4).")
      .def_property_readonly(
          "h", [](const RealtimeLstm& self) { return layer_states(self, false); },
          "Copy of h_t^l of every layer: num_layers lists of hidden_size floats.")
      .def_property_readonly(
          "c", [](const RealtimeLstm& self) { return layer_states(self, true); },
          "Copy of c_t^l of every layer: num_layers lists of hidden_size floats.")
      .def_property_readonly("input_size", &RealtimeLstm::input_size)
      .def_property_readonly("hidden_size", &RealtimeLstm::hidden_size)
      .def_property_readonly("num_layers", &RealtimeLstm::num_layers);
}
