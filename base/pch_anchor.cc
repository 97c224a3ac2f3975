// The object the precompiled headers' holder targets compile (batchlab_pch, batchlab_test_pch in
// CMakeLists.txt): the header is built with it and reused by every other target.
