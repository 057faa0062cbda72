// viz/image.hpp: an RGB raster with filled rectangles, antialiased text (DejaVu Sans through
// stb_truetype) and PNG encoding (stb_image_write). Internal to the renderer.
//
//   viz::Image img(640, 480, viz::kWhite);
//   img.fill_rect(10, 10, 100, 20, {200, 0, 0});
//   viz::Font::get().draw(img, "position", 13.0f, 320, 470, viz::kBlack, viz::Align::center);
//   std::string png = img.png();
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct stbtt_fontinfo;  // stb_truetype's font handle

namespace posemb::viz {

struct Rgb {
  std::uint8_t r, g, b;
  friend bool operator==(const Rgb&, const Rgb&) = default;
};
inline constexpr Rgb kWhite{255, 255, 255}, kBlack{0, 0, 0}, kGray{90, 90, 90};

class Image {
 public:
  // width x height pixels of colour bg; throws std::invalid_argument for a side outside
  // [1, 32768].
  Image(int width, int height, Rgb bg);
  int width() const { return w_; }
  int height() const { return h_; }
  // Pixels outside the image are ignored by the writers and read as white.
  void set(int x, int y, Rgb c);
  Rgb get(int x, int y) const;
  // c over the pixel with coverage alpha in [0, 1].
  void blend(int x, int y, Rgb c, float alpha);
  void fill_rect(int x, int y, int w, int h, Rgb c);
  // A one-pixel outline of the rectangle [x, x + w) x [y, y + h).
  void stroke_rect(int x, int y, int w, int h, Rgb c);
  // The image as PNG bytes; throws std::runtime_error when encoding fails.
  std::string png() const;

 private:
  int w_, h_;
  std::vector<std::uint8_t> px_;  // (h, w, 3), rows top to bottom
};

enum class Align { left, center, right };

// A TrueType font (the POSEMB_VIZ_FONT file, DejaVu Sans from Debian's fonts-dejavu-core).
class Font {
 public:
  // The font, read once; throws std::runtime_error naming the file and the Debian package when
  // it is missing or unreadable.
  static const Font& get();
  // Advance width of text in pixels at height px.
  int width(std::string_view text, float px) const;
  // Draws text horizontally: baseline at y, its left end, centre or right end at x.
  void draw(Image& img, std::string_view text, float px, int x, int y, Rgb c, Align a) const;
  // Draws text rotated a quarter turn counterclockwise (read bottom to top), centred on (x, y).
  void draw_vertical(Image& img, std::string_view text, float px, int x, int y, Rgb c) const;

 private:
  Font();
  ~Font();
  struct Raster {
    int w = 0, h = 0, ascent = 0;
    std::vector<std::uint8_t> coverage;  // (h, w)
  };
  Raster raster(std::string_view text, float px) const;
  std::vector<unsigned char> data_;
  std::unique_ptr<stbtt_fontinfo> info_;
};

}  // namespace posemb::viz
