image_folder_source.o: src/data/io/image_folder_source.cpp \
 include/conflux/data/io/image_folder_source.hpp \
 include/conflux/data/io/name_table.hpp \
 include/conflux/data/io/sample_source.hpp \
 include/conflux/data/io/dataset.hpp include/conflux/model/tensor.hpp \
 include/conflux/core/error.hpp include/conflux/core/sha256.hpp \
 include/conflux/data/io/file_bytes.hpp
include/conflux/data/io/image_folder_source.hpp:
include/conflux/data/io/name_table.hpp:
include/conflux/data/io/sample_source.hpp:
include/conflux/data/io/dataset.hpp:
include/conflux/model/tensor.hpp:
include/conflux/core/error.hpp:
include/conflux/core/sha256.hpp:
include/conflux/data/io/file_bytes.hpp:
