#pragma once
/// @file keys.hpp
/// Every config key, once: the one list that both the section structs (sections.hpp: the
/// typed member and its C++ default) and the schema (schema.cpp: path, type, range, default as
/// TOML text, choices, doc and the binding that stores a value into the member) are expanded
/// from. Adding a key is one line group here plus its use; nothing else repeats it.
///
/// Each section has one list macro taking two macros, applied to every entry:
///
///   KEY(section, name, C++ type, default, range, choices, doc)
///   HOOKED(section, name, C++ type, value type, default, range, choices, doc)
///
/// - `default` is a C++ initialiser that is also TOML: a number, `true`/`false`, a string
///   literal, a braced list written `{}` or `{0.0}` (TOML `[]`, `[0.0]`), or CONFLUX_REQUIRED.
///   The member is initialised from it and docs/config.md shows its spelling, so `600` and
///   `600.0` stay what they are.
/// - `range` is `unbounded`, `in(min, max)` (inclusive) or `above(min, max)` (min exclusive);
///   list keys check every entry. `kIntMax` is shown as "inf".
/// - `choices` is a parenthesised list of allowed strings, `()` for any.
/// - HOOKED keys are stored by the hook `<section>_<name>` of the config builder
///   (src/config/key_hooks.cpp) instead of plainly: paths resolved against the environment
///   and other keys, `"auto"` or a number. `value type` is the ValueType enumerator of what
///   the key accepts, which the member type alone does not say.

/// The data directory when neither data.dir nor $CONFLUX_DATA names one: a per-user location,
/// never relative to the working directory. Its one spelling for help texts and the key's
/// doc; config/environment resolves it (docs/design.md, "Data directory").
#define CONFLUX_USER_DATA_DIR "${XDG_DATA_HOME:-$HOME/.local/share}/conflux/data"

/// The default of a key that every config must set.
#define CONFLUX_REQUIRED \
  {}

// clang-format off
#define CONFLUX_RUN_KEYS(KEY, HOOKED)                                                           \
  KEY(run, name, std::string, "conflux", unbounded, (),                                         \
      "Name of the experiment, shown in logs.")                                                 \
  HOOKED(run, dir, std::filesystem::path, kString, "runs/{time}", unbounded, (),                \
      "Run directory for the resolved config, metrics and model; `{time}` becomes the "         \
      "launch date-time (agreed by all ranks), `{name}` the run name.")                         \
  KEY(run, seed, std::uint64_t, 42, in(0, kIntMax), (),                                         \
      "Seed of everything random: weight init, epoch order, augmentation.")

#define CONFLUX_CLUSTER_KEYS(KEY, HOOKED)                                                       \
  KEY(cluster, trainers, int, 1, in(1, 65536), (),                                              \
      "Number of trainer ranks; the first ranks of MPI_COMM_WORLD train.")                      \
  KEY(cluster, workers, int, -1, in(-1, 65536), (),                                             \
      "Number of preprocessing-worker ranks; -1 means all ranks that are not trainers.")        \
  KEY(cluster, preprocess_threads, int, 1, in(1, 256), (),                                      \
      "Preprocessing threads per trainer rank.")                                                \
  KEY(cluster, blas_threads, int, 1, in(1, 256), (),                                            \
      "Compute threads per rank: OpenBLAS's, and oneDNN's for convolutions (keep 1 when "       \
      "ranks share cores).")                             \
  KEY(cluster, peer_timeout_s, double, 600, in(0.1, 86400), (),                                 \
      "Longest wait for another rank before failing with an error naming it.")                  \
  KEY(cluster, worker_threads, int, 1, in(1, 256), (),                                          \
      "Preprocessing threads per worker rank (the data service).")

#define CONFLUX_DATA_KEYS(KEY, HOOKED)                                                          \
  KEY(data, dataset, std::string, CONFLUX_REQUIRED, unbounded,                                  \
      ("mnist", "fashion-mnist", "cifar10", "image-folder", "packed", "hdf5-arrays"),           \
      "Dataset to train on: a built-in one (read from data.dir), or your own at data.path: an " \
      "image folder (<path>/<split>/<class>/*.jpg|png), shards made by `conflux data pack`, or "  \
      "HDF5 arrays (docs/datasets.md).")                                                        \
  HOOKED(data, path, std::filesystem::path, kString, "", unbounded, (),                         \
      "Where your own dataset is (data.dataset = image-folder: the root holding the split "     \
      "folders; packed: the pack directory; hdf5-arrays: the HDF5 file).")                      \
  KEY(data, train_split, std::string, "train", unbounded, (),                                   \
      "Split used for training: the sub-folder of an image folder or the split of a pack.")     \
  KEY(data, test_split, std::string, "val", unbounded, (),                                      \
      "Split used for evaluation: the sub-folder of an image folder or the split of a pack.")   \
  KEY(data, channels, int, 3, in(1, 3), (),                                                     \
      "Channels of decoded images (1 = grayscale, 3 = RGB); grayscale, CMYK and alpha images "  \
      "are converted to it. 2 is refused.")                                                     \
  KEY(data, num_classes, int, 0, in(0, 1 << 24), (),                                            \
      "Classes of an hdf5-arrays dataset (labels must lie in [0, N)); 0 = the largest label + " \
      "1. Image folders and packs take it from their class folders.")                           \
  KEY(data, hdf5_train_images, std::string, "/train/images", unbounded, (),                     \
      "hdf5-arrays: the dataset of training images, [N, H, W, C] or [N, C, H, W], uint8 or "    \
      "float32 (float32 in [0, 1]).")                                                           \
  KEY(data, hdf5_train_labels, std::string, "/train/labels", unbounded, (),                     \
      "hdf5-arrays: the dataset of training labels, [N], int32 or int64 (or any integer).")     \
  KEY(data, hdf5_test_images, std::string, "/test/images", unbounded, (),                       \
      "hdf5-arrays: the dataset of test images (shape and type as the training images).")       \
  KEY(data, hdf5_test_labels, std::string, "/test/labels", unbounded, (),                       \
      "hdf5-arrays: the dataset of test labels.")                                               \
  KEY(data, hdf5_layout, std::string, "hwc", unbounded, ("hwc", "chw"),                         \
      "hdf5-arrays: the order of an image's axes, hwc ([N, H, W, C], as NumPy/PIL write) or "   \
      "chw ([N, C, H, W], as PyTorch tensors).")                                                \
  KEY(data, on_corrupt, std::string, "error", unbounded, ("error", "skip"),                     \
      "A sample that cannot be decoded (corrupt, truncated, not an image): error (exit 2, "     \
      "naming the file, or shard and offset) or skip (the same decision on every rank; "        \
      "counted, logged and audited as skipped).")                                               \
  HOOKED(data, dir, std::filesystem::path, kString, "", unbounded, (),                          \
      "Directory holding mnist/, fashion-mnist/, cifar-10/; empty means $CONFLUX_DATA, "        \
      "else " CONFLUX_USER_DATA_DIR ".")                                                        \
  HOOKED(data, hdf5_file, std::filesystem::path, kString, "", unbounded, (),                    \
      "Read the dataset from this HDF5 file (made by `conflux data convert`) instead of "       \
      "the original files.")                                                                    \
  KEY(data, train_limit, std::int64_t, 0, in(0, kIntMax), (),                                   \
      "Use only the first N training samples (0 = all); for quick tests.")                      \
  KEY(data, test_limit, std::int64_t, 0, in(0, kIntMax), (),                                    \
      "Use only the first N test samples (0 = all).")                                           \
  HOOKED(data, offload_ratio, double, kFloatOrAuto, 0.0, in(0, 1), (),                          \
      "Fraction of each trainer's batches built by worker ranks (the rest by its own "          \
      "preprocessing threads); changeable at run time, never changes the trained model. "       \
      "\"auto\": the profiler chooses each trainer's ratio and keeps adjusting it.")            \
  KEY(data, offload_ratios, std::vector<float>, {}, in(0, 1), (),                               \
      "Per-trainer offload ratios (one per trainer); empty = data.offload_ratio for all.")      \
  KEY(data, prefetch_batches, int, 4, in(1, 1024), (),                                          \
      "Batches a trainer prepares ahead (local or requested from workers); bounds its "         \
      "memory in flight.")                                                                      \
  KEY(data, worker_credits, int, 2, in(1, 64), (),                                              \
      "Most requests a trainer has outstanding at one worker (back-pressure).")                 \
  KEY(data, worker_timeout_s, double, 30, in(0.001, 86400), (),                                 \
      "A worker that has not answered a request within this time is skipped: the trainer "      \
      "builds the batch itself and drops the late answer. At the end of training a worker gets "  \
      "this long (at least 2 s) to finish; one that does not is left behind (exit unchanged).")                                     \
  KEY(data, worker_backoff_s, double, 10, in(0, 86400), (),                                     \
      "How long a trainer sends nothing to a worker that missed the deadline.")                 \
  KEY(data, worker_send_buffers, int, 2, in(1, 64), (),                                         \
      "Batches a worker holds while sending (bounds its memory in flight).")                    \
  KEY(data, cache_mb, int, 64, in(1, 1048576), (),                                              \
      "Memory in MB a rank uses for encoded samples read ahead of the batches it will build "   \
      "(streamed sources: image-folder, packed, hdf5-arrays): no read starts past it, so at "   \
      "most this plus one sample is held; the peak is reported at the end.")                    \
  KEY(data, audit, bool, false, unbounded, (),                                                  \
      "Record the samples every trainer consumed and check each sample of each epoch was "      \
      "used exactly once (writes audit-trainer<t>.csv in the run directory).")

#define CONFLUX_TRANSFORM_KEYS(KEY, HOOKED)                                                     \
  KEY(transform, pad, int, 0, in(0, 64), (),                                                    \
      "Zero padding added on each side before cropping.")                                       \
  KEY(transform, crop, int, 0, in(0, 4096), (),                                                 \
      "Random crop size (square); 0 = no crop, the image keeps its size.")                      \
  KEY(transform, hflip, bool, false, unbounded, (),                                             \
      "Random horizontal flip with p = 0.5.")                                                   \
  KEY(transform, mean, std::vector<float>, {0.0}, in(-1e6, 1e6), (),                            \
      "Per-channel mean subtracted after scaling pixels to [0, 1] (1 or C values).")            \
  KEY(transform, std, std::vector<float>, {1.0}, in(1e-12, 1e6), (),                            \
      "Per-channel standard deviation divided by after the mean (1 or C values, > 0).")         \
  KEY(transform, resized_crop, int, 0, in(0, 4096), (),                                         \
      "Random resized crop (bilinear) to this square size; 0 = off; excludes pad/crop.")        \
  KEY(transform, eval_resize, int, 0, in(0, 65536), (),                                         \
      "Evaluation of images of any size: resize the shorter side to this (bilinear), then "     \
      "centre-crop transform.resized_crop; 0 = resized_crop * 8/7 rounded (256 for 224).")      \
  KEY(transform, decode, std::string, "region", unbounded, ("region", "full"),                  \
      "JPEGs of any size with transform.resized_crop: region decodes only the crop's window, "  \
      "at the smallest DCT scale of 1/8, 2/8, 4/8, 8/8 that still covers the output "          \
      "(evaluation: the whole image at the smallest one covering eval_resize); full decodes "  \
      "at full size first. PNGs and other transforms always decode in full "                   \
      "(docs/datasets.md).")                                                                   \
  KEY(transform, resized_crop_scale_min, float, 0.08, in(1e-6, 1), (),                          \
      "Smallest area fraction of a resized crop.")                                              \
  KEY(transform, resized_crop_scale_max, float, 1.0, in(1e-6, 1), (),                           \
      "Largest area fraction of a resized crop.")                                               \
  KEY(transform, resized_crop_ratio_min, float, 0.75, in(1e-3, 1e3), (),                        \
      "Smallest aspect ratio (w/h) of a resized crop.")                                         \
  KEY(transform, resized_crop_ratio_max, float, 1.3333333, in(1e-3, 1e3), (),                   \
      "Largest aspect ratio (w/h) of a resized crop.")                                          \
  KEY(transform, rotation_degrees, float, 0.0, in(0, 180), (),                                  \
      "Random rotation by U(-d, d) degrees, bilinear, zero fill; 0 = off.")                     \
  KEY(transform, brightness, float, 0.0, in(0, 1), (),                                          \
      "Colour jitter: brightness factor U(1-b, 1+b); 0 = off.")                                 \
  KEY(transform, contrast, float, 0.0, in(0, 1), (),                                            \
      "Colour jitter: contrast factor U(1-c, 1+c); 0 = off.")                                   \
  KEY(transform, saturation, float, 0.0, in(0, 1), (),                                          \
      "Colour jitter: saturation factor U(1-s, 1+s), 3-channel images only; 0 = off.")          \
  KEY(transform, blur_kernel, int, 0, in(0, 63), (),                                            \
      "Gaussian blur kernel size (odd); 0 = off.")                                              \
  KEY(transform, blur_sigma_min, float, 0.1, in(1e-3, 100), (),                                 \
      "Smallest blur sigma.")                                                                   \
  KEY(transform, blur_sigma_max, float, 2.0, in(1e-3, 100), (),                                 \
      "Largest blur sigma.")                                                                    \
  KEY(transform, blur_probability, float, 0.5, in(0, 1), (),                                    \
      "Chance a sample is blurred.")                                                            \
  KEY(transform, cutout_size, int, 0, in(0, 4096), (),                                          \
      "Cutout: side of a square set to 0 after normalisation; 0 = off.")                        \
  KEY(transform, cutout_probability, float, 1.0, in(0, 1), (),                                  \
      "Chance a sample gets the cutout square.")                                                \
  HOOKED(transform, plugin, std::filesystem::path, kString, "", unbounded, (),                  \
      "Shared library with a user transform (see examples/plugins); loaded on every rank "      \
      "that preprocesses; empty = none.")                                                       \
  KEY(transform, plugin_args, std::string, "", unbounded, (),                                   \
      "Argument string handed to the plugin's create().")

#define CONFLUX_TRAIN_KEYS(KEY, HOOKED)                                                         \
  KEY(train, epochs, int, 1, in(1, 1e6), (),                                                    \
      "Number of epochs.")                                                                      \
  KEY(train, batch_size, int, 128, in(1, 1 << 24), (),                                          \
      "Global batch size, split evenly over the trainer ranks.")                                \
  KEY(train, optimizer, std::string, "sgd", unbounded, ("sgd", "adam", "adamw"),               \
      "Optimiser, with PyTorch's semantics (docs/training.md): sgd (torch.optim.SGD), adam "    \
      "(torch.optim.Adam, L2 decay added to the gradient) or adamw (torch.optim.AdamW, "        \
      "decoupled decay).")                                                                      \
  KEY(train, lr, double, 0.01, above(0, 100), (),                                               \
      "Learning rate (the peak, when a schedule or warm-up applies).")                          \
  KEY(train, lr_schedule, std::string, "constant", unbounded,                                   \
      ("constant", "cosine", "step", "multistep"),                                              \
      "Learning-rate schedule after warm-up, stepped every step: constant; cosine annealing "   \
      "from train.lr to 0 over the steps after warm-up; step (times train.lr_gamma every "      \
      "train.lr_step_size steps); multistep (times train.lr_gamma at each of "                  \
      "train.lr_milestones).")                                                                  \
  KEY(train, warmup_steps, std::int64_t, 0, in(0, kIntMax), (),                                 \
      "Steps of linear warm-up from 0 to train.lr before the schedule.")                        \
  KEY(train, lr_step_size, std::int64_t, 0, in(0, kIntMax), (),                                 \
      "lr_schedule = \"step\": global steps between decays (counted from step 0, like the "    \
      "warm-up; at least train.warmup_steps); 0 otherwise.")                                    \
  KEY(train, lr_milestones, std::vector<float>, {}, in(1, 16777216), (),                        \
      "lr_schedule = \"multistep\": increasing whole global steps (from step 0, like the "     \
      "warm-up; none before train.warmup_steps) at which the rate is multiplied by "            \
      "train.lr_gamma; empty otherwise.")                                                       \
  KEY(train, lr_gamma, double, 0.1, above(0, 1), (),                                            \
      "Decay factor of the step and multistep schedules.")                                      \
  KEY(train, momentum, double, 0.0, in(0, 0.999999), (),                                        \
      "SGD momentum (sgd only; Adam's are train.adam_beta1 and train.adam_beta2).")             \
  KEY(train, nesterov, bool, false, unbounded, (),                                              \
      "Nesterov momentum (sgd with train.momentum > 0, as in PyTorch).")                        \
  KEY(train, weight_decay, double, 0.0, in(0, 1), (),                                           \
      "Weight decay: added to the gradient as wd * w (sgd, adam), or decoupled as "             \
      "w *= 1 - lr * wd before the step (adamw).")                                              \
  KEY(train, adam_beta1, double, 0.9, in(0, 0.999999), (),                                      \
      "Adam/AdamW: decay of the first-moment average.")                                         \
  KEY(train, adam_beta2, double, 0.999, in(0, 0.999999), (),                                    \
      "Adam/AdamW: decay of the second-moment average.")                                        \
  KEY(train, adam_eps, double, 1e-8, above(0, 1), (),                                           \
      "Adam/AdamW: added to the bias-corrected sqrt of the second moment.")                     \
  KEY(train, label_smoothing, double, 0.0, in(0, 0.999999), (),                                 \
      "Label smoothing of the training loss (nn.CrossEntropyLoss(label_smoothing)): the "       \
      "target is 1 - eps on the label plus eps / classes on every class. Evaluation reports "   \
      "the plain cross-entropy.")                                                               \
  KEY(train, clip_grad_norm, double, 0.0, in(0, 1e9), (),                                       \
      "Clip the merged gradient to this global L2 norm before each update "                     \
      "(torch.nn.utils.clip_grad_norm_); 0 = off.")                                             \
  KEY(train, init_from, std::string, "", unbounded, (),                                         \
      "Start from the weights in this model file (a run's model.h5) instead of a random "       \
      "init: fine-tuning. Its tensors must match the model's; a checkpoint, when resuming, "    \
      "replaces them.")                                                                         \
  KEY(train, init_reset_output, bool, false, unbounded, (),                                     \
      "With train.init_from: keep the output layer (the last layer with parameters) randomly "  \
      "initialised instead of loading it, e.g. for another number of classes.")                 \
  KEY(train, noise_scale, bool, false, unbounded, (),                                           \
      "Estimate the gradient noise scale B_noise (McCandlish et al. 2018: the gradient "       \
      "variance's trace over the squared norm of the mean gradient) from each step's "          \
      "per-trainer and merged gradients (2 or more trainers; docs/planning.md); reported per "  \
      "epoch, for conflux plan --target-accuracy. CPU path only.")                              \
  KEY(train, log_every, int, 100, in(0, kIntMax), (),                                           \
      "Print a progress line every N steps on rank 0 (0 = only per epoch).")                    \
  KEY(train, eval, bool, true, unbounded, (),                                                   \
      "Evaluate on the test set after every epoch.")                                            \
  KEY(train, max_model_memory_mb, std::int64_t, 65536, in(0, kIntMax), (),                     \
      "Refuse, in `conflux config check` and at start-up, a model whose estimated memory per "  \
      "trainer (parameters, gradients, optimiser state, one batch's activations) exceeds "      \
      "this many MiB; 0 = no bound. limits.memory_mb, when it applies to trainers, bounds it "  \
      "too.")                                                                                   \
  KEY(train, device, std::string, "auto", unbounded, ("auto", "cpu", "gpu"),                    \
      "Where trainer ranks compute: auto (a GPU when the node has one, else the CPU, said "     \
      "once), cpu, or gpu (an error without one).")                                            \
  KEY(train, conv_kernels, std::string, "auto", unbounded, ("auto", "onednn", "im2col"),        \
      "How conv2d layers compute on the CPU: onednn (oneDNN's direct convolutions, kernels "    \
      "chosen per CPU: fastest), im2col (im2col + OpenBLAS: the same digest on every AVX2 CPU " \
      "with CONFLUX_BLAS_PIN=portable), or auto (onednn, im2col when results are portable).") \
  KEY(train, precision, std::string, "fp32", unbounded, ("fp32", "tf32", "bf16"),               \
      "GPU trainers' arithmetic: fp32 (TF32 off, the CPU's results within rounding), tf32 "     \
      "(tensor cores on fp32 data), or bf16 (as torch.autocast: bf16 activations, "              \
      "convolutions and matrix products; fp32 master weights, optimiser state, batch-norm "      \
      "statistics and loss). CPU trainers always compute in fp32.")                             \
  KEY(train, gpu_deterministic, bool, true, unbounded, (),                                      \
      "GPU trainers: only convolution algorithms cuDNN declares deterministic (the same bits "  \
      "on every run on one GPU type); false lets cuDNN pick faster ones that add with atomics.") \
  KEY(train, gpu_workspace_mb, std::int64_t, 256, in(0, 65536), (),                             \
      "GPU trainers: the most device memory one cuDNN convolution call may use as scratch, in " \
      "MiB; algorithms that need more are not chosen (0: only those that need none).")          \
  KEY(train, gpu_graphs, bool, true, unbounded, (),                                             \
      "GPU trainers: replay each training step's forward and backward pass as one captured "    \
      "CUDA graph once its shape is steady (the same bits as running it kernel by kernel, "     \
      "without the launch overhead). Steps with batch norm over several trainers are not "     \
      "captured; captured steps sum the gradients after backward (no comm.bucket_mb buckets).")

#define CONFLUX_CHECKPOINT_KEYS(KEY, HOOKED)                                                    \
  KEY(checkpoint, every_steps, std::int64_t, 0, in(0, kIntMax), (),                             \
      "Write a checkpoint every N training steps (0 = not by steps).")                          \
  KEY(checkpoint, every_seconds, double, 0, in(0, 1e7), (),                                     \
      "Write a checkpoint when this many seconds passed since the last one (0 = not by "        \
      "time); decided by trainer 0 and agreed at a step boundary.")                             \
  KEY(checkpoint, keep, int, 3, in(1, 100000), (),                                              \
      "Keep the newest K checkpoints; older ones are deleted after a new one is durable.")      \
  HOOKED(checkpoint, dir, std::filesystem::path, kString, "", unbounded, (),                    \
      "Checkpoint directory; empty = <run.dir>/checkpoints. Must be visible to every "          \
      "trainer rank (a shared file system on clusters).")                                       \
  KEY(checkpoint, resume, std::string, "none", unbounded, (),                                   \
      "Where to start: none (from scratch), auto (the newest valid checkpoint in "              \
      "checkpoint.dir, else from scratch) or the path of a checkpoint file. "                   \
      "`conflux train --resume X` sets it.")                                                    \
  KEY(checkpoint, final, bool, true, unbounded, (),                                             \
      "Also checkpoint after the last step, so that resuming a finished run only reports.")     \
  KEY(checkpoint, on_all_corrupt, std::string, "fail", unbounded, ("fail", "restart"),          \
      "With resume = auto, when checkpoints exist but every one is rejected as corrupt: fail "  \
      "(exit 2, naming each file and why) or restart (train from scratch). Rejected files are " \
      "renamed to *.corrupt either way, so they never count toward checkpoint.keep.")

#define CONFLUX_PROFILE_KEYS(KEY, HOOKED)                                                       \
  KEY(profile, enabled, bool, true, unbounded, (),                                              \
      "Profile every step (data wait, compute, gradient sync, callbacks) and every worker "     \
      "(service time, busy fraction, queue depth); writes <run.dir>/profile-trainerN.jsonl.")   \
  KEY(profile, initial_steps, std::int64_t, 5, in(0, kIntMax), (),                              \
      "Warm-up steps before the start-up bottleneck measurement.")                              \
  KEY(profile, steps, std::int64_t, 20, in(1, kIntMax), (),                                     \
      "Steps of the start-up bottleneck measurement (then the controller runs every "           \
      "profile.interval_s).")                                                                   \
  KEY(profile, bottleneck_threshold, double, 1.3, in(1, 100), (),                               \
      "The job is input-bound when the compute ceiling exceeds the local pipeline's rate "      \
      "by this factor (FastFlow's threshold).")                                                 \
  KEY(profile, interval_s, double, 0.5, in(0.01, 3600), (),                                     \
      "Profiling window: one profile.jsonl record and one controller decision per "             \
      "window.")                                                                                \
  KEY(profile, hysteresis, double, 0.03, in(0, 1), (),                                          \
      "The auto offload ratio moves only when its target differs by more than this.")           \
  KEY(profile, timeline, bool, true, unbounded, (),                                             \
      "Write <run.dir>/timeline.json (Chrome trace / Perfetto): steps, waits, requests, "       \
      "checkpoints and decisions of every rank.")                                               \
  KEY(profile, timeline_max_events, std::int64_t, 200000, in(0, kIntMax), (),                   \
      "Most timeline events kept per rank (later ones are counted and dropped).")               \
  KEY(profile, timeline_flush_s, double, 2.0, in(0.05, 3600), (),                               \
      "Every rank appends its new timeline events to <run.dir>/timeline/rank-N.json this "      \
      "often, so that a crash or kill loses at most this much of the timeline.")                \
  KEY(profile, tensorboard, bool, true, unbounded, (),                                          \
      "Write TensorBoard event files to <run.dir>/tensorboard/: loss, accuracy, learning "      \
      "rate, samples/s, data wait and offload ratio every train.log_every steps, and each "     \
      "epoch's metrics.")

#define CONFLUX_COMM_KEYS(KEY, HOOKED)                                                          \
  KEY(comm, strategy, std::string, "allreduce", unbounded, ("allreduce", "kreduce"),            \
      "Gradient synchronisation among trainers: MPI allreduce, or K-Reduce (comm.aggregators "  \
      "ranks each reduce one chunk of the flattened gradient).")                                \
  KEY(comm, aggregators, int, 0, in(0, 65536), (),                                              \
      "K-Reduce: number of aggregator trainers (the first K); 0 = every trainer (K = W).")      \
  KEY(comm, nonaggregator_batch_size, int, 0, in(0, 1 << 24), (),                               \
      "K-Reduce: per-step batch of each non-aggregator trainer; 0 = the aggregators' batch "    \
      "(train.batch_size / cluster.trainers).")                                                 \
  KEY(comm, stale_nonaggregators, bool, false, unbounded, (),                                   \
      "K-Reduce: non-aggregators do not wait for the step's merged gradient and apply it one "  \
      "step late (FasDL's one-step-stale model).")                                              \
  KEY(comm, bucket_mb, double, 25.0, in(0, 65536), (),                                          \
      "GPU trainers summing with NCCL: gradients are summed in buckets of about this many MiB " \
      "as backward produces them, overlapping the rest of backward; 0 = one sum after it.")

#define CONFLUX_LIMITS_KEYS(KEY, HOOKED)                                                        \
  KEY(limits, memory_mb, int, 0, in(0, 10240), (),                                              \
      "Lambda-like limit per rank: memory cap in MB with a CPU share of memory_mb / "           \
      "limits.mb_per_vcpu; 0 = no limit. Lambda allows 128..10240.")                            \
  KEY(limits, mb_per_vcpu, double, 1769, in(1, 1e6), (),                                        \
      "Memory that buys one vCPU (AWS Lambda: 1769 MB).")                                       \
  KEY(limits, cpu_period_ms, double, 20, in(1, 1000), (),                                       \
      "CPU throttling period: each period the rank may use share x period of CPU time.")        \
  KEY(limits, ranks, std::string, "all", unbounded, ("all", "trainers", "workers"),             \
      "Which ranks run under limits.memory_mb.")

#define CONFLUX_PRICES_KEYS(KEY, HOOKED)                                                        \
  KEY(prices, lambda_x86_gb_s, double, 0.0000166667, in(0, 1e6), (),                            \
      "Lambda x86 price per GB-second (USD).")                                                  \
  KEY(prices, lambda_arm_gb_s, double, 0.0000133334, in(0, 1e6), (),                            \
      "Lambda arm64 price per GB-second (USD).")                                                \
  KEY(prices, lambda_request, double, 0.0000002, in(0, 1e6), (),                                \
      "Lambda price per invocation (USD; 0.20 per million).")                                   \
  KEY(prices, lambda_max_seconds, double, 900, in(1, 1e6), (),                                  \
      "Longest Lambda invocation; a longer job re-invokes every function this often.")          \
  KEY(prices, object_put, double, 0.000005, in(0, 1e6), (),                                     \
      "Object store price per PUT request (USD; S3 standard 0.005 per 1000).")                  \
  KEY(prices, object_get, double, 0.0000004, in(0, 1e6), (),                                    \
      "Object store price per GET request (USD; S3 standard 0.0004 per 1000).")                 \
  KEY(prices, slurm_core_hour, double, 0.05, in(0, 1e6), (),                                    \
      "SLURM price per core-hour (USD).")                                                       \
  KEY(prices, slurm_gpu_hour, double, 2.0, in(0, 1e6), (),                                      \
      "SLURM price per GPU-hour (USD).")

#define CONFLUX_FAULT_KEYS(KEY, HOOKED)                                                         \
  KEY(fault, worker, int, -1, in(-1, 65536), (),                                                \
      "Fault injection for tests: index of the worker rank to misbehave; -1 = none.")           \
  KEY(fault, mode, std::string, "delay", unbounded, ("delay", "stop", "slow"),                  \
      "Fault injection: delay every answer by fault.delay_s, stop answering, or build "         \
      "fault.factor times slower.")                                                             \
  KEY(fault, factor, double, 2.0, in(1, 1000), (),                                              \
      "Fault injection (mode slow): how many times longer each build takes.")                   \
  KEY(fault, delay_s, double, 1.0, in(0, 86400), (),                                            \
      "Fault injection: delay per answer.")                                                     \
  KEY(fault, after, std::int64_t, 0, in(0, kIntMax), (),                                        \
      "Fault injection: the worker behaves for this many answers first.")
// clang-format on

/// Every key in documentation order (the order of docs/config.md and the loader's checks).
#define CONFLUX_ALL_KEYS(KEY, HOOKED)  \
  CONFLUX_RUN_KEYS(KEY, HOOKED)        \
  CONFLUX_CLUSTER_KEYS(KEY, HOOKED)    \
  CONFLUX_DATA_KEYS(KEY, HOOKED)       \
  CONFLUX_TRANSFORM_KEYS(KEY, HOOKED)  \
  CONFLUX_TRAIN_KEYS(KEY, HOOKED)      \
  CONFLUX_CHECKPOINT_KEYS(KEY, HOOKED) \
  CONFLUX_PROFILE_KEYS(KEY, HOOKED)    \
  CONFLUX_COMM_KEYS(KEY, HOOKED)       \
  CONFLUX_LIMITS_KEYS(KEY, HOOKED)     \
  CONFLUX_PRICES_KEYS(KEY, HOOKED)     \
  CONFLUX_FAULT_KEYS(KEY, HOOKED)
