#pragma once
/// @file checkpoint_file.hpp
/// One checkpoint as one HDF5 file (layout in docs/checkpoints.md): written to a temporary
/// file, flushed, fsynced and renamed; a checksum over every dataset is verified on load.
/// Its parts: the layout and checksum (checkpoint_layout.hpp), the writer, the reader and the
/// inspection text, each in its own header included here.

#include "conflux/ckpt/checkpoint_inspect.hpp"
#include "conflux/ckpt/checkpoint_reader.hpp"
#include "conflux/ckpt/checkpoint_writer.hpp"
