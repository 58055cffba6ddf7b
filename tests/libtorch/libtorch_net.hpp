// A small convolutional network and its training step, for the libtorch tests and benchmark.
#pragma once

// (ivalue.h first: libtorch 1.13's headers need it before them under clang 14 in C++20; the
// parts of the C++ API used, not all of <torch/torch.h>, which takes half again as long to
// compile)
#include <ATen/core/ivalue.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

namespace tmtest {

struct netImpl : torch::nn::Module {  // (TORCH_MODULE names it so)
  netImpl()
      : conv(register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 4, 3)))),
        fc(register_module("fc", torch::nn::Linear(4 * 13 * 13, 10))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv->forward(x)), 2);
    return torch::log_softmax(fc->forward(x.flatten(1)), 1);
  }
  torch::nn::Conv2d conv;
  torch::nn::Linear fc;
};
TORCH_MODULE(net);

/// Eight 28 x 28 images, a step of SGD with momentum.
struct trainer {
  net model;
  torch::optim::SGD optimizer{model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9)};
  torch::Tensor x = torch::randn({8, 1, 28, 28});
  torch::Tensor y = torch::randint(0, 10, {8});

  void step() {
    RECORD_USER_SCOPE("train_step");
    optimizer.zero_grad();
    torch::Tensor loss = torch::nll_loss(model->forward(x), y);
    loss.backward();
    optimizer.step();
  }
};

}  // namespace tmtest
