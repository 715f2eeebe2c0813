"""From a traced call to a compiled program: the micro-batch the model is traced on, the
import into popsim IR, the compile options the host builds, anchors, programs on disk
(the executable cache and exported files), the compile progress bar and the gradient
programs tests compile."""
