// The plain T5 relative bias loops (see relative_bias_loop.hpp), built -O3 -march=native. Like
// llmc_encoder.cpp, this file includes no header and defines only these C functions on raw
// pointers, so that no -march=native code can end up called by the rest of the program.
extern "C" {

static void forward_row(float* __restrict out, const float* __restrict table,
                        const int* __restrict bucket, int H, int h, int Tk) {
  for (int j = 0; j < Tk; j++) out[j] = table[(long)bucket[j] * H + h];
}

void posemb_loop_relative_bias_forward(float* bias, const float* table, const int* bucket, int H,
                                       int Tq, int Tk) {
  for (int h = 0; h < H; h++) {
    for (int i = 0; i < Tq; i++) {
      forward_row(bias + ((long)h * Tq + i) * Tk, table, bucket + (long)i * Tk, H, h, Tk);
    }
  }
}

void posemb_loop_relative_bias_forward_omp(float* bias, const float* table, const int* bucket,
                                           int H, int Tq, int Tk) {
#pragma omp parallel for collapse(2)
  for (int h = 0; h < H; h++) {
    for (int i = 0; i < Tq; i++) {
      forward_row(bias + ((long)h * Tq + i) * Tk, table, bucket + (long)i * Tk, H, h, Tk);
    }
  }
}

void posemb_loop_relative_bias_backward(float* dtable, const float* dbias, const int* bucket, int H,
                                        int Tq, int Tk) {
  for (int h = 0; h < H; h++) {
    for (int i = 0; i < Tq; i++) {
      const float* g = dbias + ((long)h * Tq + i) * Tk;
      const int* b = bucket + (long)i * Tk;
      for (int j = 0; j < Tk; j++) dtable[(long)b[j] * H + h] += g[j];
    }
  }
}
}
