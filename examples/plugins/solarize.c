/* solarize: an example conflux transform plugin (see include/conflux/data/transform/plugin_abi.h).
 *
 * With probability `probability`, every pixel value v >= `threshold` becomes 1 - v.
 * Arguments: "threshold=0.5,probability=0.5" (both optional, each in [0, 1]).
 *
 * Build: gcc -shared -fPIC -O2 -Iinclude examples/plugins/solarize.c \
 *            -o build/lib/libconflux-solarize.so */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conflux/data/transform/plugin_abi.h"

/* Read-only after create(), which is what lets apply() run on many threads at once. */
typedef struct solarize_state {
  float threshold;
  double probability;
} solarize_state;

/* SplitMix64's finaliser: a strong 64-bit mixer, so neighbouring sample keys give unrelated
 * draws. Kept here so that the plugin depends on nothing but plugin_abi.h. */
static uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/* The salt decorrelates this draw from any other consumer of the same random_key. */
static double uniform01(uint64_t random_key) {
  const uint64_t bits = splitmix64(random_key ^ 0x736F6C6172697A65ull /* "solarize" */);
  return (double)(bits >> 11) * (1.0 / 9007199254740992.0); /* 53 bits -> [0, 1) */
}

static int is_space(char c) {
  return c == ' ' || c == '\t';
}

/* Copies [begin, end) without surrounding blanks into out (size bytes); 0 when it does not fit. */
static int trimmed(const char* begin, const char* end, char* out, size_t size) {
  while (begin < end && is_space(*begin)) ++begin;
  while (end > begin && is_space(end[-1])) --end;
  if ((size_t)(end - begin) >= size) return 0;
  memcpy(out, begin, (size_t)(end - begin));
  out[end - begin] = '\0';
  return 1;
}

/* Parses a number in [0, 1]; 0 with a message in error otherwise. */
static int parse_unit(const char* key, const char* text, double* value, char* error,
                      size_t error_size) {
  char* end = NULL;
  errno = 0;
  const double parsed = strtod(text, &end);
  if (text[0] == '\0' || *end != '\0' || errno == ERANGE || !isfinite(parsed)) {
    snprintf(error, error_size, "%s: '%s' is not a number", key, text);
    return 0;
  }
  if (parsed < 0.0 || parsed > 1.0) {
    snprintf(error, error_size, "%s = %s is outside [0, 1]", key, text);
    return 0;
  }
  *value = parsed;
  return 1;
}

static void* solarize_create(const char* args, char* error, size_t error_size) {
  double threshold = 0.5;
  double probability = 0.5;
  int seen_threshold = 0;
  int seen_probability = 0;
  const char* item = args != NULL ? args : "";
  for (;;) {
    const char* comma = strchr(item, ',');
    const char* item_end = comma != NULL ? comma : item + strlen(item);
    const char* equals = memchr(item, '=', (size_t)(item_end - item));
    char key[64];
    char value[128];
    if (equals == NULL) {
      /* An empty item ("" or a trailing comma) is harmless; anything else lacks its value. */
      if (!trimmed(item, item_end, value, sizeof value) || value[0] != '\0') {
        snprintf(error, error_size, "expected key=value, got '%.*s' (keys: threshold, probability)",
                 (int)(item_end - item), item);
        return NULL;
      }
    } else {
      if (!trimmed(item, equals, key, sizeof key) ||
          !trimmed(equals + 1, item_end, value, sizeof value)) {
        snprintf(error, error_size, "argument too long near '%.32s'", item);
        return NULL;
      }
      int* seen = strcmp(key, "threshold") == 0     ? &seen_threshold
                  : strcmp(key, "probability") == 0 ? &seen_probability
                                                    : NULL;
      if (seen == NULL) {
        snprintf(error, error_size, "unknown key '%s' (keys: threshold, probability)", key);
        return NULL;
      }
      if (*seen) {
        snprintf(error, error_size, "%s given twice", key);
        return NULL;
      }
      *seen = 1;
      if (!parse_unit(key, value, seen == &seen_threshold ? &threshold : &probability, error,
                      error_size)) {
        return NULL;
      }
    }
    if (comma == NULL) break;
    item = comma + 1;
  }
  solarize_state* state = malloc(sizeof *state);
  if (state == NULL) {
    snprintf(error, error_size, "out of memory");
    return NULL;
  }
  state->threshold = (float)threshold;
  state->probability = probability;
  return state;
}

static void solarize_destroy(void* state) {
  free(state);
}

static int solarize_apply(void* opaque, conflux_image* image, uint64_t random_key, char* error,
                          size_t error_size) {
  const solarize_state* state = opaque;
  if (image->channels < 0 || image->height < 0 || image->width < 0) {
    snprintf(error, error_size, "invalid image shape %dx%dx%d", image->channels, image->height,
             image->width);
    return 1;
  }
  const size_t n = (size_t)image->channels * (size_t)image->height * (size_t)image->width;
  if (image->data == NULL && n != 0) {
    snprintf(error, error_size, "image data is NULL");
    return 1;
  }
  /* uniform01 < 1 always, so probability 1 solarizes every sample and 0 none. */
  if (!(uniform01(random_key) < state->probability)) return 0;
  for (size_t i = 0; i < n; ++i) {
    const float v = image->data[i];
    if (v >= state->threshold) image->data[i] = 1.0f - v;
  }
  return 0;
}

static const conflux_transform_plugin kSolarize = {
    CONFLUX_TRANSFORM_PLUGIN_ABI, "solarize", solarize_create, solarize_destroy, solarize_apply,
};

/** Entry point conflux looks up with dlsym. */
__attribute__((visibility("default"))) const conflux_transform_plugin* conflux_transform_plugin_v1(
    void) {
  return &kSolarize;
}
