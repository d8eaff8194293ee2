limited_source.o: src/data/io/limited_source.cpp \
 include/conflux/data/io/limited_source.hpp \
 include/conflux/data/io/sample_source.hpp \
 include/conflux/data/io/dataset.hpp include/conflux/model/tensor.hpp \
 include/conflux/core/error.hpp
include/conflux/data/io/limited_source.hpp:
include/conflux/data/io/sample_source.hpp:
include/conflux/data/io/dataset.hpp:
include/conflux/model/tensor.hpp:
include/conflux/core/error.hpp:
