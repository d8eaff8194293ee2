open_source.o: src/data/io/open_source.cpp \
 include/conflux/data/io/open_source.hpp \
 include/conflux/config/sections.hpp include/conflux/config/keys.hpp \
 include/conflux/data/io/sample_source.hpp \
 include/conflux/data/io/dataset.hpp include/conflux/model/tensor.hpp \
 include/conflux/core/error.hpp include/conflux/data/io/catalog.hpp \
 include/conflux/data/io/hdf5_array_source.hpp \
 include/conflux/data/io/hdf5_dataset.hpp \
 include/conflux/data/io/image_folder_source.hpp \
 include/conflux/data/io/name_table.hpp \
 include/conflux/data/io/limited_source.hpp \
 include/conflux/data/io/packed_source.hpp \
 include/conflux/data/io/file_bytes.hpp \
 include/conflux/data/io/pack_format.hpp
include/conflux/data/io/open_source.hpp:
include/conflux/config/sections.hpp:
include/conflux/config/keys.hpp:
include/conflux/data/io/sample_source.hpp:
include/conflux/data/io/dataset.hpp:
include/conflux/model/tensor.hpp:
include/conflux/core/error.hpp:
include/conflux/data/io/catalog.hpp:
include/conflux/data/io/hdf5_array_source.hpp:
include/conflux/data/io/hdf5_dataset.hpp:
include/conflux/data/io/image_folder_source.hpp:
include/conflux/data/io/name_table.hpp:
include/conflux/data/io/limited_source.hpp:
include/conflux/data/io/packed_source.hpp:
include/conflux/data/io/file_bytes.hpp:
include/conflux/data/io/pack_format.hpp:
