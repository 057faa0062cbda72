#include "viz/image.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include <stb_image_write.h>
#include <stb_truetype.h>

namespace posemb::viz {

Image::Image(int width, int height, Rgb bg) : w_(width), h_(height) {
  if (width < 1 || height < 1 || width > 32768 || height > 32768) {
    throw std::invalid_argument("viz::Image: " + std::to_string(width) + " x " +
                                std::to_string(height) +
                                " pixels; each side must be in "
                                "[1, 32768]");
  }
  px_.resize(static_cast<std::size_t>(w_) * static_cast<std::size_t>(h_) * 3);
  for (std::size_t i = 0; i < px_.size(); i += 3) {
    px_[i] = bg.r;
    px_[i + 1] = bg.g;
    px_[i + 2] = bg.b;
  }
}

void Image::set(int x, int y, Rgb c) {
  if (x < 0 || y < 0 || x >= w_ || y >= h_) return;
  std::uint8_t* p = &px_[(static_cast<std::size_t>(y) * static_cast<std::size_t>(w_) +
                          static_cast<std::size_t>(x)) *
                         3];
  p[0] = c.r;
  p[1] = c.g;
  p[2] = c.b;
}

Rgb Image::get(int x, int y) const {
  if (x < 0 || y < 0 || x >= w_ || y >= h_) return kWhite;
  const std::uint8_t* p = &px_[(static_cast<std::size_t>(y) * static_cast<std::size_t>(w_) +
                                static_cast<std::size_t>(x)) *
                               3];
  return {p[0], p[1], p[2]};
}

void Image::blend(int x, int y, Rgb c, float alpha) {
  if (alpha <= 0.0f) return;
  const Rgb o = get(x, y);
  auto mix = [&](std::uint8_t a, std::uint8_t b) {
    return static_cast<std::uint8_t>(std::lround(a + (b - a) * std::min(alpha, 1.0f)));
  };
  set(x, y, {mix(o.r, c.r), mix(o.g, c.g), mix(o.b, c.b)});
}

void Image::fill_rect(int x, int y, int w, int h, Rgb c) {
  for (int yy = std::max(y, 0); yy < std::min(y + h, h_); ++yy) {
    for (int xx = std::max(x, 0); xx < std::min(x + w, w_); ++xx) set(xx, yy, c);
  }
}

void Image::stroke_rect(int x, int y, int w, int h, Rgb c) {
  fill_rect(x, y, w, 1, c);
  fill_rect(x, y + h - 1, w, 1, c);
  fill_rect(x, y, 1, h, c);
  fill_rect(x + w - 1, y, 1, h, c);
}

std::string Image::png() const {
  std::string out;
  auto append = [](void* ctx, void* data, int size) {
    static_cast<std::string*>(ctx)->append(static_cast<const char*>(data),
                                           static_cast<std::size_t>(size));
  };
  if (stbi_write_png_to_func(append, &out, w_, h_, 3, px_.data(), w_ * 3) == 0) {
    throw std::runtime_error("viz: PNG encoding of a " + std::to_string(w_) + " x " +
                             std::to_string(h_) + " image failed");
  }
  return out;
}

Font::Font() {
  const char* path = POSEMB_VIZ_FONT;
  std::ifstream in(path, std::ios::binary);
  data_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  info_ = std::make_unique<stbtt_fontinfo>();
  if (!in.good() && !in.eof()) data_.clear();
  if (data_.empty() || stbtt_InitFont(info_.get(), data_.data(), 0) == 0) {
    throw std::runtime_error(std::string("viz: cannot read the font ") + path +
                             " to draw text in PNG plots (Debian package fonts-dejavu-core; "
                             "scripts/setup.sh build installs it)");
  }
}

Font::~Font() = default;

const Font& Font::get() {
  static const Font font;
  return font;
}

int Font::width(std::string_view text, float px) const {
  const stbtt_fontinfo& info = *info_;
  const float scale = stbtt_ScaleForPixelHeight(&info, px);
  float x = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    int adv = 0, lsb = 0;
    stbtt_GetCodepointHMetrics(&info, static_cast<unsigned char>(text[i]), &adv, &lsb);
    x += static_cast<float>(adv) * scale;
    if (i + 1 < text.size()) {
      x += scale * static_cast<float>(
                       stbtt_GetCodepointKernAdvance(&info, static_cast<unsigned char>(text[i]),
                                                     static_cast<unsigned char>(text[i + 1])));
    }
  }
  return static_cast<int>(std::ceil(x));
}

Font::Raster Font::raster(std::string_view text, float px) const {
  const stbtt_fontinfo& info = *info_;
  const float scale = stbtt_ScaleForPixelHeight(&info, px);
  int ascent = 0, descent = 0, gap = 0;
  stbtt_GetFontVMetrics(&info, &ascent, &descent, &gap);
  Raster r;
  r.ascent = static_cast<int>(std::ceil(static_cast<float>(ascent) * scale));
  r.h = r.ascent + static_cast<int>(std::ceil(-static_cast<float>(descent) * scale)) + 1;
  r.w = width(text, px) + 2;
  r.coverage.assign(static_cast<std::size_t>(r.w) * static_cast<std::size_t>(r.h), 0);
  float x = 0;
  std::vector<unsigned char> glyph;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const int cp = static_cast<unsigned char>(text[i]);
    const float shift = x - std::floor(x);
    int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    stbtt_GetCodepointBitmapBoxSubpixel(&info, cp, scale, scale, shift, 0, &x0, &y0, &x1, &y1);
    const int gw = x1 - x0, gh = y1 - y0;
    if (gw > 0 && gh > 0) {
      glyph.assign(static_cast<std::size_t>(gw) * static_cast<std::size_t>(gh), 0);
      stbtt_MakeCodepointBitmapSubpixel(&info, glyph.data(), gw, gh, gw, scale, scale, shift, 0,
                                        cp);
      const int ox = static_cast<int>(std::floor(x)) + x0, oy = r.ascent + y0;
      for (int v = 0; v < gh; ++v) {
        for (int u = 0; u < gw; ++u) {
          const int X = ox + u, Y = oy + v;
          if (X < 0 || Y < 0 || X >= r.w || Y >= r.h) continue;
          auto& cell = r.coverage[static_cast<std::size_t>(Y) * static_cast<std::size_t>(r.w) +
                                  static_cast<std::size_t>(X)];
          cell = std::max(cell, glyph[static_cast<std::size_t>(v) * static_cast<std::size_t>(gw) +
                                      static_cast<std::size_t>(u)]);
        }
      }
    }
    int adv = 0, lsb = 0;
    stbtt_GetCodepointHMetrics(&info, cp, &adv, &lsb);
    x += static_cast<float>(adv) * scale;
    if (i + 1 < text.size()) {
      x += scale * static_cast<float>(stbtt_GetCodepointKernAdvance(
                       &info, cp, static_cast<unsigned char>(text[i + 1])));
    }
  }
  return r;
}

void Font::draw(Image& img, std::string_view text, float px, int x, int y, Rgb c, Align a) const {
  const Raster r = raster(text, px);
  const int w = width(text, px);
  const int left = a == Align::left ? x : a == Align::center ? x - w / 2 : x - w;
  const int top = y - r.ascent;
  for (int v = 0; v < r.h; ++v) {
    for (int u = 0; u < r.w; ++u) {
      const auto cov = r.coverage[static_cast<std::size_t>(v) * static_cast<std::size_t>(r.w) +
                                  static_cast<std::size_t>(u)];
      if (cov != 0) img.blend(left + u, top + v, c, static_cast<float>(cov) / 255.0f);
    }
  }
}

void Font::draw_vertical(Image& img, std::string_view text, float px, int x, int y, Rgb c) const {
  const Raster r = raster(text, px);
  // Raster pixel (u, v) goes to (left + v, bottom - u): the text's top faces left.
  const int left = x - r.h / 2, bottom = y + width(text, px) / 2;
  for (int v = 0; v < r.h; ++v) {
    for (int u = 0; u < r.w; ++u) {
      const auto cov = r.coverage[static_cast<std::size_t>(v) * static_cast<std::size_t>(r.w) +
                                  static_cast<std::size_t>(u)];
      if (cov != 0) img.blend(left + v, bottom - u, c, static_cast<float>(cov) / 255.0f);
    }
  }
}

}  // namespace posemb::viz
