/* conflux transform plugin ABI, version 1 (C, so any compiler can build a plugin).
 *
 * A plugin is a shared library exporting
 *     const conflux_transform_plugin* conflux_transform_plugin_v1(void);
 * conflux loads it at start-up on every rank that preprocesses (trainers and workers), calls
 * create() once with the config's transform.plugin_args, and apply() once per training sample,
 * after the built-in augmentations and before normalisation, on float CHW pixels in [0, 1].
 * apply() may be called concurrently from several threads on different images, so it must not
 * modify shared state. It must draw every random choice from `random_key`, which conflux
 * derives from (run.seed, epoch, sample index): that keeps batches bit-identical whichever rank
 * or thread builds them. Plugins keep the image shape. */
#ifndef CONFLUX_DATA_PLUGIN_ABI_H
#define CONFLUX_DATA_PLUGIN_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The ABI version this header describes; a plugin reports it in abi_version. */
#define CONFLUX_TRANSFORM_PLUGIN_ABI 1

/** One image: channels x height x width floats, plane by plane, row-major. */
typedef struct conflux_image {
  float* data;
  int channels;
  int height;
  int width;
} conflux_image;

/** What a plugin exports. Error texts are written NUL-terminated into `error` (size bytes). */
typedef struct conflux_transform_plugin {
  int abi_version;  /**< CONFLUX_TRANSFORM_PLUGIN_ABI */
  const char* name; /**< short name shown in logs */
  /** Parses `args`; returns the plugin's state, or NULL with a message in `error`. */
  void* (*create)(const char* args, char* error, size_t error_size);
  /** Frees a state returned by create(). */
  void (*destroy)(void* state);
  /** Transforms one image in place; returns 0, or non-zero with a message in `error`. */
  int (*apply)(void* state, conflux_image* image, uint64_t random_key, char* error,
               size_t error_size);
} conflux_transform_plugin;

/** Name of the entry point conflux looks up with dlsym. */
#define CONFLUX_TRANSFORM_PLUGIN_ENTRY "conflux_transform_plugin_v1"

#ifdef __cplusplus
}
#endif

#endif /* CONFLUX_DATA_PLUGIN_ABI_H */
