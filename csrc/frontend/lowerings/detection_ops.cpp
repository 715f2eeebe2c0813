// torchvision's detection ops, which popsim recognises only to refuse them
// with the reason: region pooling (roi_align, roi_pool and their
// position-sensitive forms) and deformable convolution have no lowering, and
// non-maximum suppression keeps a number of boxes that depends on the data,
// which a compiled program (on an IPU as here) cannot have. Detection models
// filter their boxes so (torchvision's Faster R-CNN, RetinaNet, SSD).

#include "frontend/lowering_registry.h"

namespace popsim::frontend::lowerings {

void registerDetectionOps(LoweringRegistry& registry) {
  const std::string hostSide =
      "; detection models also select boxes by score and size at run time: run the backbone "
      "(and the heads' convolutions) with popsim and the box selection on the host";
  for (const char* op :
       {"torchvision::roi_align", "torchvision::roi_pool", "torchvision::ps_roi_align",
        "torchvision::ps_roi_pool", "torchvision::deform_conv2d"}) {
    registry.refuse(op, "torchvision's region pooling and deformable convolution have no popsim "
                        "lowering" +
                            hostSide);
  }
  registry.refuse("torchvision::nms", "non-maximum suppression keeps a number of boxes that "
                                      "depends on the data, which a compiled program cannot "
                                      "have" +
                                          hostSide);
}

} // namespace popsim::frontend::lowerings
