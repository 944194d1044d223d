// Fits y = x @ w_true + b_true with the C++ API: ops, autograd and a hand-written SGD step.
// Prints the loss as it falls and exits non-zero if it does not.
#include <cstdio>

#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "ops/ops.h"

using namespace ofl::internal;

int main() {
  default_generator().manual_seed(0);
  Tensor x = randn({256, 8});
  Tensor w_true = randn({8, 1});
  Tensor y = add(matmul(x, w_true), full({1}, 0.5));

  Tensor w = zeros({8, 1}), b = zeros({1});
  w.set_requires_grad(true);
  b.set_requires_grad(true);
  double first = 0, last = 0;
  for (int step = 0; step < 200; ++step) {
    Tensor loss = mse_loss(add(matmul(x, w), b), y);
    autograd::backward({loss}, {Tensor()}, false, false);
    {
      autograd::NoGradGuard no_grad;
      for (Tensor* p : {&w, &b}) {
        Tensor g = p->grad();
        sub_(*p, g, 0.1);
        p->set_grad(Tensor());
      }
    }
    last = loss.item<double>();
    if (step == 0) first = last;
    if (step % 50 == 0 || step == 199) std::printf("step %3d  loss %.6f\n", step, last);
  }
  return last < 1e-3 * first ? 0 : 1;
}
