// Runs the pipelining tutorial's MNIST network, exported from Python with
// torch.jit.trace or torch.jit.script (export_mnist.py), pipelined over four
// simulated IPUs: prints each IPU's memory and the call's simulated time, and
// checks the outputs against LibTorch's own forward pass.
//
//   mnist_inference MODEL.pt
#include <popsim/popsim.h>

#include <torch/script.h>

#include <cstdlib>
#include <iostream>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " MODEL.pt (written by export_mnist.py)\n";
    return 2;
  }
  torch::jit::Module module = torch::jit::load(argv[1]);
  module.eval();

  // Each of the network's four layers starts a block on its own IPU, and the
  // blocks run as a pipeline: 8 micro-batches of 4 images per call.
  popsim::Options options;
  options.deviceIterations(8).setExecutionStrategy(
      popsim::PipelinedExecution({{"layer1", 0}, {"layer2", 1}, {"layer3", 2}, {"layer4", 3}}));

  torch::manual_seed(0);
  const at::Tensor images = torch::randn({8 * 4, 1, 28, 28});
  try {
    popsim::InferenceSession session(module, {images}, options);
    const at::Tensor logits = session.run({images}).at(0);

    std::cout << "popsim " << popsim::version() << ": the MNIST network on "
              << session.memoryReport().ipus.size() << " simulated IPUs, pipelined\n";
    std::cout << session.memoryReport();
    std::cout << "Simulated IPU time of the call: " << session.simulatedTime() * 1e3 << " ms ("
              << session.cycleCount() << " cycles; simulated, not measured)\n";
    // Where each IPU's time went, the throughput and advice: popsim's sizing report.
    std::cout << "\n" << session.sizingReport() << "\n";

    torch::NoGradGuard noGrad;
    const at::Tensor expected = module.forward({images}).toTensor();
    const double difference = (logits - expected).abs().max().item<double>();
    std::cout << "Largest difference from LibTorch's forward: " << difference << "\n";
    if (!torch::allclose(logits, expected, 1e-5, 1e-5)) {
      std::cerr << "popsim's outputs differ from LibTorch's\n";
      return 1;
    }
  } catch (const popsim::Error& error) {
    std::cerr << "popsim error (" << popsim::errorKindName(error.kind()) << "): " << error.what()
              << "\n";
    return 1;
  }
  return EXIT_SUCCESS;
}
