// Real-time Realeasy step (paper 000 §IV-C, §IV-E, Algorithms 2-3): one time step of the
// unidirectional LSTM stack plus the dense layer, on physical joint states, carrying the hidden
// states (h_t^l, c_t^l) of every layer from one call to the next.
//
// The weights are those of realeasy_ros.networks.RealtimeRealeasy (torch.nn.LSTM, gate order
// i, f, g, o; then Linear(hidden -> features)) and the joint-limit scaler. Per layer l:
//   z = W_ih x + b_ih + W_hh h_{t-1} + b_hh                     (eq. 2-5, pre-activations)
//   i = sigmoid(z_i), f = sigmoid(z_f), g = tanh(z_g), o = sigmoid(z_o)
//   c_t = f * c_{t-1} + i * g                                   (eq. 6)
//   h_t = o * tanh(c_t)                                         (eq. 7)
// with x the normalised state for layer 0 and h_t^{l-1} above it; then
// residual = (W_d h_t^{L-1} + b_d) * (upper - lower)  (a normalised residual in physical units).
//
// step() allocates nothing: every buffer is sized in the constructor. The math is in double;
// the activations use Eigen's vectorised exp, with tanh(v) = 2 sigmoid(2v) - 1 (exact to
// ~1e-16 absolute), about twice as fast as std::tanh per element at these sizes.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace realeasy {

class RealtimeLstm {
 public:
  using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Vector = Eigen::VectorXd;

  // weight_ih[l] (4H x in_l), weight_hh[l] (4H x H), bias_ih[l], bias_hh[l] (4H) for
  // l = 0..L-1 with in_0 = F and in_l = H above; dense_weight (F x H), dense_bias (F);
  // lower, scale (F) with scale = upper - lower > 0. std::invalid_argument on any mismatch.
  RealtimeLstm(const std::vector<Matrix>& weight_ih, const std::vector<Matrix>& weight_hh,
               const std::vector<Vector>& bias_ih, const std::vector<Vector>& bias_hh,
               const Matrix& dense_weight, const Vector& dense_bias, const Vector& lower,
               const Vector& scale) {
    const std::size_t layers = weight_ih.size();
    if (layers == 0) fail("at least one LSTM layer is needed, got none");
    if (weight_hh.size() != layers || bias_ih.size() != layers || bias_hh.size() != layers) {
      fail("weight_ih, weight_hh, bias_ih and bias_hh must have one entry per layer, got " +
           std::to_string(weight_ih.size()) + ", " + std::to_string(weight_hh.size()) + ", " +
           std::to_string(bias_ih.size()) + " and " + std::to_string(bias_hh.size()));
    }
    features_ = static_cast<int>(weight_ih[0].cols());
    hidden_ = static_cast<int>(weight_hh[0].cols());
    if (features_ < 1 || hidden_ < 1) fail("input and hidden sizes must be positive");
    const Eigen::Index gates = 4 * static_cast<Eigen::Index>(hidden_);
    for (std::size_t l = 0; l < layers; ++l) {
      const std::string at = " of layer " + std::to_string(l);
      const Eigen::Index in = l == 0 ? features_ : hidden_;
      check_shape(weight_ih[l], gates, in, "weight_ih" + at);
      check_shape(weight_hh[l], gates, hidden_, "weight_hh" + at);
      check_length(bias_ih[l], gates, "bias_ih" + at);
      check_length(bias_hh[l], gates, "bias_hh" + at);
      Layer layer;
      layer.input = static_cast<int>(in);
      layer.weight.resize(gates, in + hidden_);  // [W_ih | W_hh]: one product per layer
      layer.weight << weight_ih[l], weight_hh[l];
      layer.bias = bias_ih[l] + bias_hh[l];
      layer.z = Vector::Zero(in + hidden_);  // [x_t or h_t^{l-1}; h_{t-1}^l]
      layer.c = Vector::Zero(hidden_);
      layers_.push_back(std::move(layer));
    }
    check_shape(dense_weight, features_, hidden_, "dense_weight");
    check_length(dense_bias, features_, "dense_bias");
    check_length(lower, features_, "lower");
    check_length(scale, features_, "scale");
    if (!(scale.array() > 0.0).all() || !scale.allFinite()) {
      fail("scale (upper - lower) must be finite and positive");
    }
    dense_weight_ = dense_weight;
    dense_bias_ = dense_bias;
    lower_ = lower;
    scale_ = scale;
    gates_ = Vector::Zero(gates);
  }

  // One step (Algorithm 3 lines 4-6): physical state x (F values) -> physical residual (F).
  // x and residual may be the same memory.
  void step(const double* x_physical, double* residual_physical) noexcept {
    Layer& first = layers_.front();
    for (int j = 0; j < features_; ++j) {
      first.z[j] = (x_physical[j] - lower_[j]) / scale_[j];
    }
    const Eigen::Index H = hidden_;
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      Layer& layer = layers_[l];
      gates_.noalias() = layer.weight * layer.z;  // eq. (2)-(5) pre-activations
      gates_ += layer.bias;
      // sigmoid of all 4H at once, the candidate's block doubled first: tanh(v) = 2 s(2v) - 1
      gates_.segment(2 * H, H) *= 2.0;
      gates_.array() = (1.0 + (-gates_.array()).exp()).inverse();
      const auto i = gates_.segment(0, H).array();
      const auto f = gates_.segment(H, H).array();
      const auto g = 2.0 * gates_.segment(2 * H, H).array() - 1.0;
      const auto o = gates_.segment(3 * H, H).array();
      layer.c.array() = f * layer.c.array() + i * g;  // eq. (6)
      auto h = layer.z.tail(H);                       // h_{t-1}^l becomes h_t^l
      h.array() = o * (2.0 / (1.0 + (-2.0 * layer.c.array()).exp()) - 1.0);  // eq. (7)
      if (l + 1 < layers_.size()) layers_[l + 1].z.head(H) = h;              // input of layer l + 1
    }
    const Layer& last = layers_.back();
    Eigen::Map<Vector> residual(residual_physical, features_);
    residual.noalias() = dense_weight_ * last.z.tail(hidden_);
    residual += dense_bias_;
    residual.array() *= scale_.array();
  }

  // h_{-1}^l = c_{-1}^l = 0 (Algorithm 2 line 4).
  void reset() noexcept {
    for (Layer& layer : layers_) {
      layer.z.setZero();
      layer.c.setZero();
    }
  }

  int input_size() const noexcept { return features_; }
  int hidden_size() const noexcept { return hidden_; }
  int num_layers() const noexcept { return static_cast<int>(layers_.size()); }

  // h_{t}^l and c_{t}^l of the last step (zeros after reset), layer 0 <= l < num_layers().
  Eigen::Ref<const Vector> h(int layer) const {
    return layers_.at(static_cast<std::size_t>(layer)).z.tail(hidden_);
  }
  Eigen::Ref<const Vector> c(int layer) const {
    return layers_.at(static_cast<std::size_t>(layer)).c;
  }

 private:
  struct Layer {
    int input = 0;
    Matrix weight;  // (4H x (input + H)) = [W_ih | W_hh]
    Vector bias;    // (4H) = b_ih + b_hh
    Vector z;       // (input + H) = [layer input; h]
    Vector c;       // (H)
  };

  static double sigmoid(double v) noexcept { return 1.0 / (1.0 + std::exp(-v)); }

  [[noreturn]] static void fail(const std::string& what) {
    throw std::invalid_argument("RealtimeLstm: " + what);
  }
  static void check_shape(const Matrix& m, Eigen::Index rows, Eigen::Index cols,
                          const std::string& name) {
    if (m.rows() != rows || m.cols() != cols) {
      fail(name + " must be " + std::to_string(rows) + " x " + std::to_string(cols) + ", got " +
           std::to_string(m.rows()) + " x " + std::to_string(m.cols()));
    }
    if (!m.allFinite()) fail(name + " has non-finite entries");
  }
  static void check_length(const Vector& v, Eigen::Index size, const std::string& name) {
    if (v.size() != size) {
      fail(name + " must have " + std::to_string(size) + " entries, got " +
           std::to_string(v.size()));
    }
    if (!v.allFinite()) fail(name + " has non-finite entries");
  }

  int features_ = 0;
  int hidden_ = 0;
  std::vector<Layer> layers_;
  Matrix dense_weight_;
  Vector dense_bias_;
  Vector lower_;
  Vector scale_;
  Vector gates_;
};

}  // namespace realeasy
