# The ONNX importer reads ModelProto with the ONNX project's own protobuf
# library (Debian: libonnx-dev, which ships onnx/onnx-ml.pb.h and
# libonnx_proto.so built against the system protobuf).
find_package(Protobuf QUIET)
find_path(LOOM_ONNX_INCLUDE_DIR onnx/onnx-ml.pb.h)
find_library(LOOM_ONNX_PROTO_LIB onnx_proto)
if(NOT LOOM_ONNX_INCLUDE_DIR OR NOT LOOM_ONNX_PROTO_LIB OR NOT Protobuf_FOUND)
  message(FATAL_ERROR
    "The ONNX importer (lib/Import/OnnxImporter.cpp) needs the ONNX protobuf "
    "library: install libonnx-dev and libprotobuf-dev (scripts/setup.sh does).")
endif()
# Models below opset 13 are upgraded with libonnx's C++ version converter
# (OnnxConvert.cpp, the one file that catches the exceptions it throws).
find_library(LOOM_ONNX_LIB onnx)
if(NOT LOOM_ONNX_LIB)
  message(FATAL_ERROR
    "The ONNX importer needs libonnx (its version converter): install "
    "libonnx-dev (scripts/setup.sh does).")
endif()
list(APPEND LOOM_IMPORT_SOURCES OnnxWire.cpp OnnxConvert.cpp)
set_source_files_properties(OnnxConvert.cpp PROPERTIES COMPILE_OPTIONS
  "-fexceptions")
list(APPEND LOOM_IMPORT_LIBS ${LOOM_ONNX_LIB} ${LOOM_ONNX_PROTO_LIB}
  protobuf::libprotobuf)
include_directories(SYSTEM ${LOOM_ONNX_INCLUDE_DIR} ${Protobuf_INCLUDE_DIRS})
add_compile_definitions(ONNX_ML=1 ONNX_NAMESPACE=onnx)
# The ONNX emitters by op family (Onnx/OnnxImporter.h) and the folders.
list(APPEND LOOM_IMPORT_SOURCES Onnx/Fold.cpp Onnx/Elementwise.cpp Onnx/Activation.cpp
  Onnx/Matmul.cpp
  Onnx/Normalization.cpp Onnx/Shape.cpp Onnx/Conv.cpp Onnx/Lrn.cpp)
