# Fake torch whose import fails like a CUDA wheel that cannot find cuDNN.
raise ImportError("libcudnn.so.9: cannot open shared object file: No such file or directory")
