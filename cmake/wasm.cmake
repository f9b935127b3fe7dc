# NEARDUP_BUILD_WASM: the WebAssembly build of the signing path (wasm/, doc/wasm.md), made by Debian's
# emscripten as a project of its own (an external project: it needs emscripten's toolchain, this one
# the host's), from the tables the native generator writes (src/text: neardup_generated_tables).
# The npm package lands in ${NEARDUP_WASM_PACKAGE_DIR}; the Node tests are registered in tests/.
include(ExternalProject)
find_program(NEARDUP_EMCMAKE emcmake REQUIRED)
find_program(NEARDUP_NODE node REQUIRED)
set(NEARDUP_EMSCRIPTEN_TOOLCHAIN /usr/share/emscripten/cmake/Modules/Platform/Emscripten.cmake
    CACHE FILEPATH "emscripten's CMake toolchain file")
set(NEARDUP_WASM_BINARY_DIR ${CMAKE_BINARY_DIR}/wasm)
set(NEARDUP_WASM_PACKAGE_DIR ${NEARDUP_WASM_BINARY_DIR}/js)
# emscripten runs its JavaScript tools with Debian's node, which finds Debian's acorn here.
set(NEARDUP_EMSCRIPTEN_ENV ${CMAKE_COMMAND} -E env NODE_PATH=/usr/share/nodejs)
ExternalProject_Add(neardup_wasm
  SOURCE_DIR ${PROJECT_SOURCE_DIR}/wasm
  BINARY_DIR ${NEARDUP_WASM_BINARY_DIR}
  CMAKE_COMMAND ${NEARDUP_EMSCRIPTEN_ENV} ${CMAKE_COMMAND}
  CMAKE_ARGS -G ${CMAKE_GENERATOR} -DCMAKE_BUILD_TYPE=Release
             -DCMAKE_TOOLCHAIN_FILE=${NEARDUP_EMSCRIPTEN_TOOLCHAIN}
             -DNEARDUP_GENERATED_DIR=${NEARDUP_GENERATED_DIR}
  BUILD_COMMAND ${NEARDUP_EMSCRIPTEN_ENV} ${CMAKE_COMMAND} --build ${NEARDUP_WASM_BINARY_DIR}
  INSTALL_COMMAND ""
  BUILD_ALWAYS ON
  BUILD_BYPRODUCTS ${NEARDUP_WASM_PACKAGE_DIR}/neardup_wasm.wasm ${NEARDUP_WASM_PACKAGE_DIR}/neardup_wasm.mjs
                   ${NEARDUP_WASM_PACKAGE_DIR}/neardup.mjs
  DEPENDS neardup_generated_tables)
