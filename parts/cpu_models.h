/* Performance models, placement, quantization (spliced into hpdl.h). */
