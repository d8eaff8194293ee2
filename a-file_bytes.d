file_bytes.o: src/data/io/file_bytes.cpp \
 include/conflux/data/io/file_bytes.hpp include/conflux/core/error.hpp
include/conflux/data/io/file_bytes.hpp:
include/conflux/core/error.hpp:
