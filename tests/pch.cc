// The target that owns the test programs' precompiled GoogleTest header (CMakeLists.txt).
