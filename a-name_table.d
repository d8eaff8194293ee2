name_table.o: src/data/io/name_table.cpp \
 include/conflux/data/io/name_table.hpp include/conflux/core/error.hpp
include/conflux/data/io/name_table.hpp:
include/conflux/core/error.hpp:
