// The llm.c encoder loop shape (see llmc_encoder.hpp), built -O3 -march=native. This file
// includes no header and defines only these C functions on raw pointers, so that no
// -march=native code (an inline function or template instantiation shared with other files) can
// end up called by the rest of the program.
extern "C" {

void posemb_llmc_encoder_forward(float* out, const int* inp, const float* wte, const float* wpe,
                                 int B, int T, int C) {
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++) {
      float* out_bt = out + b * T * C + t * C;
      const float* wte_ix = wte + inp[b * T + t] * C;
      const float* wpe_t = wpe + t * C;
      for (int i = 0; i < C; i++) out_bt[i] = wte_ix[i] + wpe_t[i];
    }
  }
}

void posemb_llmc_encoder_forward_omp(float* out, const int* inp, const float* wte, const float* wpe,
                                     int B, int T, int C) {
#pragma omp parallel for collapse(2)
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++) {
      float* out_bt = out + b * T * C + t * C;
      const float* wte_ix = wte + inp[b * T + t] * C;
      const float* wpe_t = wpe + t * C;
      for (int i = 0; i < C; i++) out_bt[i] = wte_ix[i] + wpe_t[i];
    }
  }
}

void posemb_llmc_encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp,
                                  int B, int T, int C) {
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++) {
      const float* dout_bt = dout + b * T * C + t * C;
      float* dwte_ix = dwte + inp[b * T + t] * C;
      float* dwpe_t = dwpe + t * C;
      for (int i = 0; i < C; i++) {
        const float d = dout_bt[i];
        dwte_ix[i] += d;
        dwpe_t[i] += d;
      }
    }
  }
}

// The position-only add: the encoder loop without its token term.
void posemb_llmc_add_positions_forward(float* x, const float* wpe, int B, int T, int C) {
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++) {
      float* x_bt = x + b * T * C + t * C;
      const float* wpe_t = wpe + t * C;
      for (int i = 0; i < C; i++) x_bt[i] += wpe_t[i];
    }
  }
}

void posemb_llmc_add_positions_forward_omp(float* x, const float* wpe, int B, int T, int C) {
#pragma omp parallel for collapse(2)
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++) {
      float* x_bt = x + b * T * C + t * C;
      const float* wpe_t = wpe + t * C;
      for (int i = 0; i < C; i++) x_bt[i] += wpe_t[i];
    }
  }
}

void posemb_llmc_add_positions_backward(float* dwpe, const float* dx, int B, int T, int C) {
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++) {
      const float* dx_bt = dx + b * T * C + t * C;
      float* dwpe_t = dwpe + t * C;
      for (int i = 0; i < C; i++) dwpe_t[i] += dx_bt[i];
    }
  }
}

}  // extern "C"
