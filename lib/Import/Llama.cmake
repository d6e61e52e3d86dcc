# The GGUF and Hugging Face importers (LlamaImporter.cpp) and the graph
# builder they share; they read the files through the plain-C++ format
# readers of lib/Formats.
list(APPEND LOOM_IMPORT_SOURCES LlamaGraph.cpp)
list(APPEND LOOM_IMPORT_LIBS loom_formats)
