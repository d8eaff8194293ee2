image_folder_source_test.o: tests/data/io/image_folder_source_test.cpp \
 include/conflux/data/io/image_folder_source.hpp \
 include/conflux/data/io/name_table.hpp \
 include/conflux/data/io/sample_source.hpp \
 include/conflux/data/io/dataset.hpp include/conflux/model/tensor.hpp \
 tests/data/io/../../support/image_folder.hpp \
 tests/data/io/../../support/byte_files.hpp \
 tests/data/io/../../support/temp_dir.hpp include/conflux/core/error.hpp
include/conflux/data/io/image_folder_source.hpp:
include/conflux/data/io/name_table.hpp:
include/conflux/data/io/sample_source.hpp:
include/conflux/data/io/dataset.hpp:
include/conflux/model/tensor.hpp:
tests/data/io/../../support/image_folder.hpp:
tests/data/io/../../support/byte_files.hpp:
tests/data/io/../../support/temp_dir.hpp:
include/conflux/core/error.hpp:
