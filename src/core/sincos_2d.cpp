#include "posemb/sincos_2d.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace posemb {

Matrix<float> sincos_2d_position_table(std::size_t height, std::size_t width, std::size_t dim,
                                       bool class_token) {
  const std::string op = "sincos_2d_position_table: ";
  if (dim == 0 || dim % 4 != 0) {
    throw std::invalid_argument(op + "dim " + std::to_string(dim) +
                                " is not a positive multiple of 4 (a sine and a cosine for each "
                                "of the two coordinates)");
  }
  if (height == 0 || width == 0) {
    throw std::invalid_argument(op + "grid " + std::to_string(height) + "x" +
                                std::to_string(width) + " has no cells");
  }
  const std::size_t prefix = class_token ? 1 : 0;
  const std::size_t max = std::numeric_limits<std::size_t>::max();
  if (width > (max - prefix) / height || (prefix + height * width) > max / dim) {
    throw std::length_error(op + "a " + std::to_string(height) + "x" + std::to_string(width) +
                            " grid of dim " + std::to_string(dim) + " overflows");
  }
  const std::size_t q = dim / 4;
  // MAE: omega = arange(D/4) / (D/4); omega = 1 / 10000**omega (numpy float64).
  std::vector<double> omega(q);
  for (std::size_t k = 0; k < q; ++k) {
    omega[k] = 1.0 / std::pow(10000.0, static_cast<double>(k) / static_cast<double>(q));
  }
  Matrix<float> out(prefix + height * width, dim);  // zero-initialized: the class token's row
  for (std::size_t h = 0; h < height; ++h) {
    for (std::size_t w = 0; w < width; ++w) {
      auto row = out.row(prefix + h * width + w);
      for (std::size_t k = 0; k < q; ++k) {
        const double aw = static_cast<double>(w) * omega[k];
        const double ah = static_cast<double>(h) * omega[k];
        row[k] = static_cast<float>(std::sin(aw));
        row[q + k] = static_cast<float>(std::cos(aw));
        row[2 * q + k] = static_cast<float>(std::sin(ah));
        row[3 * q + k] = static_cast<float>(std::cos(ah));
      }
    }
  }
  return out;
}

}  // namespace posemb
