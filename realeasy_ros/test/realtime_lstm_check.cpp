// C++ check of realeasy::RealtimeLstm (run by test_realtime_step.py after `make workspace`):
// step() must not touch the heap (malloc, calloc and realloc are counted) and must equal a naive
// reference implementation of eq. (2)-(7) with separate W_ih, W_hh products.
// Prints "ok <ns per step>" and exits 0, or prints the failure and exits 1.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "realeasy_ros/realtime_lstm.hpp"

// Every heap allocation goes through malloc/calloc/realloc (operator new and Eigen's
// aligned_malloc included): count them, forwarding to glibc's allocator.
static std::atomic<long> g_allocations{0};
extern "C" {
void* __libc_malloc(std::size_t size);
void* __libc_calloc(std::size_t count, std::size_t size);
void* __libc_realloc(void* p, std::size_t size);
void* malloc(std::size_t size) {
  ++g_allocations;
  return __libc_malloc(size);
}
void* calloc(std::size_t count, std::size_t size) {
  ++g_allocations;
  return __libc_calloc(count, size);
}
void* realloc(void* p, std::size_t size) {
  ++g_allocations;
  return __libc_realloc(p, size);
}
}

namespace {

using realeasy::RealtimeLstm;

struct Weights {
  std::vector<RealtimeLstm::Matrix> w_ih, w_hh;
  std::vector<RealtimeLstm::Vector> b_ih, b_hh;
  RealtimeLstm::Matrix dense_w;
  RealtimeLstm::Vector dense_b, lower, scale;
};

Weights random_weights(int features, int hidden, int layers, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  auto matrix = [&](int r, int c) {
    RealtimeLstm::Matrix m(r, c);
    for (int i = 0; i < r; ++i)
      for (int j = 0; j < c; ++j) m(i, j) = u(rng);
    return m;
  };
  auto vector = [&](int n) {
    RealtimeLstm::Vector v(n);
    for (int i = 0; i < n; ++i) v[i] = u(rng);
    return v;
  };
  Weights w;
  for (int l = 0; l < layers; ++l) {
    w.w_ih.push_back(matrix(4 * hidden, l == 0 ? features : hidden));
    w.w_hh.push_back(matrix(4 * hidden, hidden));
    w.b_ih.push_back(vector(4 * hidden));
    w.b_hh.push_back(vector(4 * hidden));
  }
  w.dense_w = matrix(features, hidden);
  w.dense_b = vector(features);
  w.lower = vector(features);
  w.scale = vector(features).array() + 1.0;
  return w;
}

// Naive eq. (2)-(7): separate products, std::vector state, allocation allowed.
struct Reference {
  const Weights& w;
  int features, hidden;
  std::vector<std::vector<double>> h, c;
  Reference(const Weights& weights, int f, int hd)
      : w(weights),
        features(f),
        hidden(hd),
        h(weights.w_ih.size(), std::vector<double>(hd, 0.0)),
        c(weights.w_ih.size(), std::vector<double>(hd, 0.0)) {}
  std::vector<double> step(const std::vector<double>& x) {
    std::vector<double> in(features);
    for (int j = 0; j < features; ++j) in[j] = (x[j] - w.lower[j]) / w.scale[j];
    for (std::size_t l = 0; l < h.size(); ++l) {
      std::vector<double> z(4 * hidden);
      for (int r = 0; r < 4 * hidden; ++r) {
        double s = w.b_ih[l][r] + w.b_hh[l][r];
        for (std::size_t k = 0; k < in.size(); ++k) s += w.w_ih[l](r, k) * in[k];
        for (int k = 0; k < hidden; ++k) s += w.w_hh[l](r, k) * h[l][k];
        z[r] = s;
      }
      auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
      for (int j = 0; j < hidden; ++j) {
        c[l][j] = sig(z[hidden + j]) * c[l][j] + sig(z[j]) * std::tanh(z[2 * hidden + j]);
        h[l][j] = sig(z[3 * hidden + j]) * std::tanh(c[l][j]);
      }
      in = h[l];
    }
    std::vector<double> out(features);
    for (int j = 0; j < features; ++j) {
      double s = w.dense_b[j];
      for (int k = 0; k < hidden; ++k) s += w.dense_w(j, k) * in[k];
      out[j] = s * w.scale[j];
    }
    return out;
  }
};

bool check(int features, int hidden, int layers, int steps, double* ns_per_step) {
  std::mt19937 rng(7u + static_cast<unsigned>(hidden * 31 + layers));
  const Weights w = random_weights(features, hidden, layers, rng);
  RealtimeLstm lstm(w.w_ih, w.w_hh, w.b_ih, w.b_hh, w.dense_w, w.dense_b, w.lower, w.scale);
  Reference reference(w, features, hidden);
  std::normal_distribution<double> n(0.0, 1.0);
  std::vector<std::vector<double>> xs(steps, std::vector<double>(features));
  for (auto& x : xs)
    for (int j = 0; j < features; ++j) x[j] = w.lower[j] + w.scale[j] * (0.5 + 0.3 * n(rng));
  std::vector<double> out(features);
  double worst = 0.0;
  for (int t = 0; t < steps; ++t) {
    const long before = g_allocations.load();
    lstm.step(xs[t].data(), out.data());
    if (g_allocations.load() != before) {
      std::printf("FAIL: step allocated on the heap (F=%d H=%d L=%d)\n", features, hidden, layers);
      return false;
    }
    const std::vector<double> expected = reference.step(xs[t]);
    for (int j = 0; j < features; ++j) worst = std::fmax(worst, std::fabs(out[j] - expected[j]));
  }
  if (!(worst < 1e-12)) {
    std::printf("FAIL: step differs from the reference by %g (F=%d H=%d L=%d)\n", worst, features,
                hidden, layers);
    return false;
  }
  lstm.reset();
  const int timed = 200000;
  const auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < timed; ++t) lstm.step(xs[t % steps].data(), out.data());
  const auto stop = std::chrono::steady_clock::now();
  *ns_per_step = std::chrono::duration<double, std::nano>(stop - start).count() / timed;
  return true;
}

}  // namespace

int main() {
  double ns = 0.0, ignored = 0.0;
  if (!check(21, 32, 3, 300, &ignored) || !check(6, 5, 1, 300, &ignored) ||
      !check(21, 21, 2, 500, &ns)) {
    return 1;
  }
  std::printf("ok %.1f\n", ns);
  return 0;
}
