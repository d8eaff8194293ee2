pack_command.o: src/cli/pack_command.cpp src/cli/pack_command.hpp \
 include/conflux/core/error.hpp \
 include/conflux/data/io/image_folder_source.hpp \
 include/conflux/data/io/name_table.hpp \
 include/conflux/data/io/sample_source.hpp \
 include/conflux/data/io/dataset.hpp include/conflux/model/tensor.hpp \
 include/conflux/data/io/pack_writer.hpp
src/cli/pack_command.hpp:
include/conflux/core/error.hpp:
include/conflux/data/io/image_folder_source.hpp:
include/conflux/data/io/name_table.hpp:
include/conflux/data/io/sample_source.hpp:
include/conflux/data/io/dataset.hpp:
include/conflux/model/tensor.hpp:
include/conflux/data/io/pack_writer.hpp:
