// The plain rotate-half loop (see rope_loop.hpp), built -O3 -march=native. Like llmc_encoder.cpp,
// this file includes no header and defines only these C functions on raw pointers, so that no
// -march=native code can end up called by the rest of the program.
extern "C" {

// One token: its H heads of D columns, by cached row c, s (D/2 values each).
static inline void rotate_token(float* __restrict x, const float* __restrict c,
                                const float* __restrict s, int H, int D, int inverse) {
  const int half = D / 2;
  for (int h = 0; h < H; h++) {
    float* xh = x + h * D;
    if (inverse) {
      for (int i = 0; i < half; i++) {
        const float x1 = xh[i], x2 = xh[i + half];
        xh[i] = x1 * c[i] + x2 * s[i];
        xh[i + half] = x2 * c[i] - x1 * s[i];
      }
    } else {
      for (int i = 0; i < half; i++) {
        const float x1 = xh[i], x2 = xh[i + half];
        xh[i] = x1 * c[i] - x2 * s[i];
        xh[i + half] = x2 * c[i] + x1 * s[i];
      }
    }
  }
}

void posemb_loop_rope_forward(float* x, const float* cos, const float* sin, int B, int T, int H,
                              int D) {
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++) {
      rotate_token(x + ((long)b * T + t) * H * D, cos + (long)t * (D / 2), sin + (long)t * (D / 2),
                   H, D, 0);
    }
  }
}

void posemb_loop_rope_forward_omp(float* x, const float* cos, const float* sin, int B, int T, int H,
                                  int D) {
#pragma omp parallel for collapse(2)
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++) {
      rotate_token(x + ((long)b * T + t) * H * D, cos + (long)t * (D / 2), sin + (long)t * (D / 2),
                   H, D, 0);
    }
  }
}

void posemb_loop_rope_backward(float* x, const float* cos, const float* sin, int B, int T, int H,
                               int D) {
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++) {
      rotate_token(x + ((long)b * T + t) * H * D, cos + (long)t * (D / 2), sin + (long)t * (D / 2),
                   H, D, 1);
    }
  }
}

}  // extern "C"
