# Fake torch whose import fails as in /work/shared/corpus/case025.json
# (pytorch/pytorch#36941: macOS wheel, the loader cannot resolve libc++).
raise ImportError(
    "dlopen(.../torch/_C.cpython-37m-darwin.so, 2): Library not loaded: @rpath/libc++.1.dylib"
)
