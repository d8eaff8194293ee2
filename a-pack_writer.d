pack_writer.o: src/data/io/pack_writer.cpp \
 include/conflux/data/io/pack_writer.hpp \
 include/conflux/data/io/sample_source.hpp \
 include/conflux/data/io/dataset.hpp include/conflux/model/tensor.hpp \
 include/conflux/core/error.hpp include/conflux/core/hdf5_file.hpp \
 include/conflux/core/hdf5.hpp /usr/include/hdf5/openmpi/hdf5.h \
 /usr/include/hdf5/openmpi/H5public.h \
 /usr/include/hdf5/openmpi/H5pubconf.h \
 /usr/include/hdf5/openmpi/H5version.h \
 /usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h \
 /usr/lib/x86_64-linux-gnu/openmpi/include/mpi_portable_platform.h \
 /usr/include/hdf5/openmpi/H5api_adpt.h \
 /usr/include/hdf5/openmpi/H5Apublic.h \
 /usr/include/hdf5/openmpi/H5Ipublic.h \
 /usr/include/hdf5/openmpi/H5Opublic.h \
 /usr/include/hdf5/openmpi/H5Lpublic.h \
 /usr/include/hdf5/openmpi/H5Tpublic.h \
 /usr/include/hdf5/openmpi/H5ACpublic.h \
 /usr/include/hdf5/openmpi/H5Cpublic.h \
 /usr/include/hdf5/openmpi/H5Dpublic.h \
 /usr/include/hdf5/openmpi/H5Epublic.h \
 /usr/include/hdf5/openmpi/H5Epubgen.h \
 /usr/include/hdf5/openmpi/H5Fpublic.h \
 /usr/include/hdf5/openmpi/H5FDpublic.h \
 /usr/include/hdf5/openmpi/H5Gpublic.h \
 /usr/include/hdf5/openmpi/H5MMpublic.h \
 /usr/include/hdf5/openmpi/H5Ppublic.h \
 /usr/include/hdf5/openmpi/H5Spublic.h \
 /usr/include/hdf5/openmpi/H5Zpublic.h \
 /usr/include/hdf5/openmpi/H5PLpublic.h \
 /usr/include/hdf5/openmpi/H5Rpublic.h \
 /usr/include/hdf5/openmpi/H5FDcore.h \
 /usr/include/hdf5/openmpi/H5FDdirect.h \
 /usr/include/hdf5/openmpi/H5FDfamily.h \
 /usr/include/hdf5/openmpi/H5FDhdfs.h /usr/include/hdf5/openmpi/H5FDlog.h \
 /usr/include/hdf5/openmpi/H5FDmirror.h \
 /usr/include/hdf5/openmpi/H5FDmpi.h /usr/include/hdf5/openmpi/H5FDmpio.h \
 /usr/include/hdf5/openmpi/H5FDmulti.h \
 /usr/include/hdf5/openmpi/H5FDros3.h \
 /usr/include/hdf5/openmpi/H5FDsec2.h \
 /usr/include/hdf5/openmpi/H5FDsplitter.h \
 /usr/include/hdf5/openmpi/H5FDstdio.h \
 include/conflux/core/hdf5_types.hpp include/conflux/core/sha256.hpp \
 include/conflux/data/io/pack_format.hpp \
 include/conflux/data/io/name_table.hpp
include/conflux/data/io/pack_writer.hpp:
include/conflux/data/io/sample_source.hpp:
include/conflux/data/io/dataset.hpp:
include/conflux/model/tensor.hpp:
include/conflux/core/error.hpp:
include/conflux/core/hdf5_file.hpp:
include/conflux/core/hdf5.hpp:
/usr/include/hdf5/openmpi/hdf5.h:
/usr/include/hdf5/openmpi/H5public.h:
/usr/include/hdf5/openmpi/H5pubconf.h:
/usr/include/hdf5/openmpi/H5version.h:
/usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h:
/usr/lib/x86_64-linux-gnu/openmpi/include/mpi_portable_platform.h:
/usr/include/hdf5/openmpi/H5api_adpt.h:
/usr/include/hdf5/openmpi/H5Apublic.h:
/usr/include/hdf5/openmpi/H5Ipublic.h:
/usr/include/hdf5/openmpi/H5Opublic.h:
/usr/include/hdf5/openmpi/H5Lpublic.h:
/usr/include/hdf5/openmpi/H5Tpublic.h:
/usr/include/hdf5/openmpi/H5ACpublic.h:
/usr/include/hdf5/openmpi/H5Cpublic.h:
/usr/include/hdf5/openmpi/H5Dpublic.h:
/usr/include/hdf5/openmpi/H5Epublic.h:
/usr/include/hdf5/openmpi/H5Epubgen.h:
/usr/include/hdf5/openmpi/H5Fpublic.h:
/usr/include/hdf5/openmpi/H5FDpublic.h:
/usr/include/hdf5/openmpi/H5Gpublic.h:
/usr/include/hdf5/openmpi/H5MMpublic.h:
/usr/include/hdf5/openmpi/H5Ppublic.h:
/usr/include/hdf5/openmpi/H5Spublic.h:
/usr/include/hdf5/openmpi/H5Zpublic.h:
/usr/include/hdf5/openmpi/H5PLpublic.h:
/usr/include/hdf5/openmpi/H5Rpublic.h:
/usr/include/hdf5/openmpi/H5FDcore.h:
/usr/include/hdf5/openmpi/H5FDdirect.h:
/usr/include/hdf5/openmpi/H5FDfamily.h:
/usr/include/hdf5/openmpi/H5FDhdfs.h:
/usr/include/hdf5/openmpi/H5FDlog.h:
/usr/include/hdf5/openmpi/H5FDmirror.h:
/usr/include/hdf5/openmpi/H5FDmpi.h:
/usr/include/hdf5/openmpi/H5FDmpio.h:
/usr/include/hdf5/openmpi/H5FDmulti.h:
/usr/include/hdf5/openmpi/H5FDros3.h:
/usr/include/hdf5/openmpi/H5FDsec2.h:
/usr/include/hdf5/openmpi/H5FDsplitter.h:
/usr/include/hdf5/openmpi/H5FDstdio.h:
include/conflux/core/hdf5_types.hpp:
include/conflux/core/sha256.hpp:
include/conflux/data/io/pack_format.hpp:
include/conflux/data/io/name_table.hpp:
