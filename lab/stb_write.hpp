// lab/stb_write.hpp: PNG encoding through stb_image_write (Debian libstb-dev).
#pragma once

#include <string>

namespace posemb::lab {

// An 8-bit RGB image (width * height * 3 bytes, rows top to bottom) as PNG bytes.
// Throws std::runtime_error when stb fails.
std::string encode_png_rgb(const unsigned char* rgb, int width, int height);

}  // namespace posemb::lab
