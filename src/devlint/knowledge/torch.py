"""What PyTorch's own APIs make, accept and move: data, not code.

Names are canonical dotted names as the import table resolves them (`nn.Linear` is
`torch.nn.Linear`). A trailing `*` matches any attribute below that prefix.
"""

# --- tensors -----------------------------------------------------------------------------

# factories that take `device=`; without it they make host tensors
FACTORIES = frozenset({
    "torch.zeros", "torch.ones", "torch.full", "torch.empty", "torch.arange", "torch.range",
    "torch.linspace", "torch.logspace", "torch.eye", "torch.rand", "torch.randn",
    "torch.randint", "torch.randperm", "torch.tensor", "torch.as_tensor", "torch.empty_strided",
    "torch.tril_indices", "torch.triu_indices", "torch.normal", "torch.bernoulli",
    "torch.sparse_coo_tensor",
    "torch.hann_window", "torch.hamming_window", "torch.blackman_window",
    "torch.bartlett_window", "torch.kaiser_window",
})

# samplers that are factories only when given numbers: given a tensor of probabilities, means or
# deviations (`torch.bernoulli(p)`, `torch.normal(0.0, std)`), the result is on that tensor's device
# (`torch.complex(re, im)` is no factory at all: an operation on its two tensors)
SAMPLING_FACTORIES = frozenset({"torch.bernoulli", "torch.normal", "torch.poisson", "torch.multinomial"})

# factories whose result is host data handed to the program (reported as DEV101, not DEV105,
# when they are not made inside forward or a loop)
DATA_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor", "torch.from_numpy",
                            "torch.Tensor", "torch.FloatTensor", "torch.LongTensor",
                            "torch.IntTensor", "torch.DoubleTensor", "torch.BoolTensor",
                            "torch.ByteTensor", "torch.HalfTensor"})

# wrap an array without copying it (rebuilding one per step costs nothing: DEV303)
ZERO_COPY_FACTORIES = frozenset({"torch.from_numpy"})

# the legacy typed tensor classes: `x.type(torch.cuda.FloatTensor)` (or its name as a string)
# moves `x` to CUDA, `x.type(torch.FloatTensor)` to the host; calling a CUDA one makes a tensor there
_LEGACY_TYPES = ("Float", "Double", "Half", "BFloat16", "Byte", "Char", "Short", "Int", "Long", "Bool")
CUDA_TENSOR_TYPES = frozenset(f"torch.cuda.{name}Tensor" for name in _LEGACY_TYPES)
HOST_TENSOR_TYPES = frozenset(f"torch.{name}Tensor" for name in _LEGACY_TYPES) | {"torch.Tensor"}

# factories that can never take a device: always host
HOST_ONLY_FACTORIES = frozenset({
    "torch.from_numpy", "torch.Tensor", "torch.FloatTensor", "torch.LongTensor",
    "torch.IntTensor", "torch.DoubleTensor", "torch.BoolTensor", "torch.ByteTensor",
    "torch.HalfTensor", "torch.frombuffer",
})

# `*_like(x)` and friends: placed where their first argument is
LIKE_FACTORIES = frozenset({
    "torch.zeros_like", "torch.ones_like", "torch.full_like", "torch.empty_like",
    "torch.rand_like", "torch.randn_like", "torch.randint_like",
})

# Tensor methods that make a new tensor on the receiver's device
NEW_METHODS = frozenset({"new_zeros", "new_ones", "new_full", "new_empty", "new_tensor"})

# methods of torch.Tensor: on a value of unknown kind that is placed somewhere, only these are
# tensor methods (`model.test(x)` on a library model says nothing of where its result is)
TENSOR_METHODS = frozenset({
    "detach", "clone", "contiguous", "float", "double", "half", "bfloat16", "long", "int",
    "short", "bool", "byte", "char", "view", "reshape", "flatten", "unflatten", "squeeze",
    "unsqueeze", "permute", "transpose", "t", "T", "mT", "expand", "repeat", "narrow",
    "abs", "exp", "log", "sigmoid", "tanh", "relu", "softmax", "log_softmax", "argmax",
    "argmin", "topk", "sort", "argsort", "max", "min", "sum", "mean", "std", "var", "norm",
    "prod", "cumsum", "pow", "sqrt", "round", "floor", "ceil", "clamp", "clip", "chunk",
    "split", "unbind", "requires_grad_", "retain_grad", "fill_", "zero_", "neg", "sign",
    "masked_select", "nonzero", "float_", "logsumexp", "all", "any", "numel", "dim",
    "unique", "roll", "flip", "tril", "triu", "diag", "view_as", "expand_as", "reshape_as",
    "type", "to_dense", "to_sparse", "pin_memory", "share_memory_", "item_", "square",
    "nan_to_num", "isnan", "isinf", "logical_not", "cpu_", "gelu", "exp_", "log1p",
    "amax", "amin", "median", "mode", "sin", "cos", "reciprocal", "rsqrt", "sub_", "mul_",
    "div_", "add_", "clamp_", "masked_fill", "masked_fill_", "index_select", "gather",
    "scatter", "scatter_", "scatter_add", "scatter_add_", "index_add", "index_add_",
    "add", "sub", "mul", "div", "matmul", "mm", "bmm", "dot", "eq", "ne", "lt", "le", "gt",
    "ge", "where", "maximum", "minimum", "copy_", "lerp", "lerp_", "addmm", "baddbmm",
    "true_divide", "floor_divide", "remainder", "fmod", "logical_and", "logical_or",
    "cross", "outer", "kron", "masked_scatter", "masked_scatter_", "index_put_",
    "index_fill", "index_fill_", "index_copy_", "put_", "take", "take_along_dim",
})


# Tensor methods whose tensor arguments must be on the receiver's device
MIXING_METHODS = frozenset({
    "add", "sub", "mul", "div", "matmul", "mm", "bmm", "dot", "eq", "ne", "lt", "le", "gt",
    "ge", "where", "maximum", "minimum", "masked_fill", "masked_fill_", "index_select",
    "gather", "scatter", "scatter_", "scatter_add", "scatter_add_", "index_add",
    "index_add_", "add_", "sub_", "mul_", "div_", "lerp", "lerp_", "addmm", "baddbmm",
    "true_divide", "floor_divide", "remainder", "fmod", "logical_and", "logical_or",
    "cross", "outer", "kron", "masked_scatter", "masked_scatter_", "masked_select",
    "index_fill", "index_fill_", "index_copy_", "take_along_dim", "expand_as_", "pow",
    "clamp", "clip",
})

# methods that copy a tensor's data into Python values
TO_PYTHON_METHODS = frozenset({"item", "tolist"})
# methods that give a tensor's size
SIZE_METHODS = frozenset({"size", "shape", "dim"})
# methods whose result has other dimensions (a 0-dim tensor viewed as (1, 1) is no longer 0-dim)
SHAPE_METHODS = frozenset({"view", "reshape", "unsqueeze", "expand"})
# attributes that give a tensor's (or an array's) shape, and its number of dimensions
SHAPE_ATTRIBUTES = frozenset({"shape"})
SIZE_ATTRIBUTES = frozenset({"ndim"})
# attributes that are the tensor itself, or a view of it on the same device
TENSOR_VIEW_ATTRIBUTES = frozenset({"data", "T", "mT", "H", "grad", "real", "imag"})
# attributes of a tensor (or of a model output) that are not tensors
NON_TENSOR_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "requires_grad", "is_cuda", "is_leaf",
                                   "grad_fn", "names", "layout", "is_sparse", "device"})
# methods whose result is a Python value: the tensor leaves the device there
HOST_VALUE_METHODS = frozenset({"item", "tolist", "size", "dim", "numel", "get_device",
                                "element_size", "nelement", "stride", "data_ptr",
                                "is_contiguous", "backward", "register_hook"})
NOTHING_RETURNING_METHODS = frozenset({"backward"})

# methods that reduce to a 0-dim tensor when called without a dim (PyTorch lets a 0-dim CPU
# tensor meet device tensors like a Python number)
REDUCTIONS = frozenset({"sum", "mean", "max", "min", "prod", "norm", "std", "var", "all",
                        "any", "amax", "amin", "median", "logsumexp", "count_nonzero"})

# torch.* functions that are not tensor operations (never a meet); everything else in torch.*
# with several tensor arguments must have them on one device
NON_MIXING_FUNCTIONS = frozenset({
    "torch.save", "torch.load", "torch.manual_seed", "torch.set_grad_enabled",
    "torch.no_grad", "torch.inference_mode", "torch.enable_grad", "torch.device",
    "torch.set_default_device", "torch.set_default_dtype", "torch.is_tensor",
    "torch.numel", "torch.set_printoptions", "torch.compile", "torch.jit.script",
    "torch.jit.trace", "torch.onnx.export", "torch.nn.utils.clip_grad_norm_",
    "torch.nn.utils.clip_grad_value_", "torch.nn.utils.rnn.pack_padded_sequence",
    "torch.nn.utils.rnn.pad_packed_sequence", "torch.nn.utils.rnn.pad_sequence",
    "torch.nn.utils.rnn.pack_sequence", "torch.utils.data.DataLoader",
    "torch.utils.data.TensorDataset", "torch.autograd.grad", "torch.equal",
    "torch.testing.assert_close", "torch.allclose", "torch.isclose", "torch.is_grad_enabled",
    "torch.cuda.*", "torch.backends.*", "torch.distributed.*", "torch.set_num_threads",
    "torch.use_deterministic_algorithms", "torch.autocast", "torch.amp.*",
    "torch.cuda.amp.*", "torch.utils.*", "torch.hub.*", "torch.optim.*", "torch.nn.init.*",
    "torch.set_float32_matmul_precision", "torch.from_numpy", "torch.get_default_dtype",
    "torch.is_floating_point", "torch.broadcast_shapes", "torch.Size", "torch.Generator",
    "torch.set_default_tensor_type", "torch.finfo", "torch.iinfo", "torch.typename",
    # expands views to a common shape: each result stays on its input's device
    "torch.broadcast_tensors",
})

# arguments of torch functions that are sizes or amounts, read as numbers (a CPU tensor there is
# turned into Python ints): (position, keyword) of each, which is no operand that must share a
# device with the tensors
SIZE_ARGUMENTS = {
    "torch.nn.functional.pad": ((1, "pad"),),
    "torch.nn.functional.interpolate": ((1, "size"), (2, "scale_factor")),
    "torch.nn.functional.upsample": ((1, "size"), (2, "scale_factor")),
    "torch.nn.functional.adaptive_avg_pool2d": ((1, "output_size"),),
    "torch.nn.functional.adaptive_max_pool2d": ((1, "output_size"),),
}

# torch functions whose result is a Python value
# element-wise functions: their result has the shape of their inputs (a 0-dim input gives a
# 0-dim output, which may still meet device tensors)
ELEMENTWISE_FUNCTIONS = frozenset({
    "torch.log", "torch.log2", "torch.log10", "torch.log1p", "torch.exp", "torch.exp2", "torch.expm1",
    "torch.sqrt", "torch.rsqrt", "torch.abs", "torch.neg", "torch.sign", "torch.reciprocal",
    "torch.ceil", "torch.floor", "torch.round", "torch.trunc", "torch.sin", "torch.cos", "torch.tan",
    "torch.tanh", "torch.sigmoid", "torch.clamp", "torch.clip", "torch.pow", "torch.erf",
})
HOST_VALUE_FUNCTIONS = frozenset({"torch.numel", "torch.is_tensor", "torch.equal",
                                  "torch.allclose", "torch.is_floating_point"})

DTYPES = frozenset({
    "torch.float", "torch.float32", "torch.float64", "torch.double", "torch.float16",
    "torch.half", "torch.bfloat16", "torch.int", "torch.int8", "torch.int16", "torch.int32",
    "torch.int64", "torch.long", "torch.uint8", "torch.bool", "torch.short",
    "torch.complex64", "torch.complex128", "torch.cfloat", "torch.float8_e4m3fn",
    "torch.float8_e5m2",
})

# --- devices -----------------------------------------------------------------------------

DEVICE_CONSTRUCTORS = frozenset({"torch.device"})
CUDA_AVAILABLE = frozenset({"torch.cuda.is_available", "torch.backends.mps.is_available",
                            "torch.cuda.device_count"})
# availability checks whose result says whether a GPU of a type is there
AVAILABILITY_CHECKS = {"torch.cuda.is_available": "cuda", "torch.backends.mps.is_available": "mps"}
CUDA_CALLS = frozenset({"torch.cuda.*"})
EMPTY_CACHE = frozenset({"torch.cuda.empty_cache"})
CURRENT_DEVICE = frozenset({"torch.cuda.current_device"})  # a device: the current CUDA one
SET_DEVICE = frozenset({"torch.cuda.set_device"})  # changes the current CUDA device
# the current accelerator, whatever its type (CUDA, MPS, XPU): a device chosen from it needs a
# GPU of some kind, not CUDA
ANY_ACCELERATOR = frozenset({"torch.accelerator.current_accelerator"})
# the names CUDA sites give `.cuda()` and `.to("cuda")` on a value (they initialise CUDA)
TENSOR_CUDA_MOVES = frozenset({"Tensor.cuda", "Tensor.to"})
SET_DEFAULT_DEVICE = frozenset({"torch.set_default_device"})
# the legacy default: `set_default_tensor_type("torch.cuda.FloatTensor")` puts what float factories
# and `torch.Tensor(...)` make on CUDA
SET_DEFAULT_TENSOR_TYPE = frozenset({"torch.set_default_tensor_type"})
NO_GRAD_CONTEXTS = frozenset({"torch.no_grad", "torch.inference_mode"})

# torch.cuda calls that fail on a machine without a usable GPU (DEV202)
CUDA_REQUIRING = frozenset({
    "torch.cuda.get_device_name", "torch.cuda.get_device_properties", "torch.cuda.set_device",
    "torch.cuda.get_device_capability", "torch.cuda.current_device", "torch.cuda.synchronize",
    "torch.cuda.mem_get_info", "torch.cuda.init", "torch.cuda.Stream", "torch.cuda.Event",
    "torch.cuda.current_stream", "torch.cuda.set_per_process_memory_fraction",
})
# torch.cuda calls that do not initialise CUDA (they are queued or check first): an
# environment setting such as CUDA_VISIBLE_DEVICES made after them still counts (DEV203)
CUDA_NOT_INITIALISING = frozenset({
    "torch.cuda.manual_seed", "torch.cuda.manual_seed_all", "torch.cuda.seed",
    "torch.cuda.seed_all", "torch.cuda.is_initialized", "torch.cuda.empty_cache",
    "torch.cuda.amp.*", "torch.cuda.nvtx.*", "torch.cuda.reset_peak_memory_stats",
    "torch.backends.*",
})
# environment variables CUDA reads once, when it initialises (DEV203)
CUDA_INIT_ENV = frozenset({"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"})
# torch.distributed initialisation: a backend="nccl" program needs GPUs by design
PROCESS_GROUP_INIT = frozenset({"torch.distributed.init_process_group"})

# --- modules -----------------------------------------------------------------------------

MODULE_BASE = "torch.nn.Module"
SEQUENTIAL = "torch.nn.Sequential"
# torch.nn.<Capitalised>: a module class (torch.nn.functional and friends are lower-case)
NN_CLASSES = frozenset({"torch.nn.[A-Z]*"})
# every torch function: the tensor arguments of those not in NON_MIXING_FUNCTIONS must meet
TORCH_FUNCTIONS = frozenset({"torch.*"})
# attributes of a module that are its parameters
MODULE_WEIGHT_ATTRIBUTES = frozenset({"weight", "bias"})

# torch.nn classes that hold no parameters or buffers: never need a move
STATELESS_MODULES = frozenset({
    "ReLU", "ReLU6", "LeakyReLU", "PReLU_", "GELU", "SiLU", "Mish", "ELU", "SELU", "CELU",
    "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "Softmax2d", "Softplus", "Softsign",
    "Hardtanh", "Hardswish", "Hardsigmoid", "Tanhshrink", "Threshold", "GLU", "LogSigmoid",
    "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout",
    "Identity", "Flatten", "Unflatten", "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d",
    "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d",
    "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle",
    "PixelUnshuffle", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
    "ReflectionPad1d", "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d",
    "ChannelShuffle", "CosineSimilarity", "PairwiseDistance", "Fold", "Unfold",
    "MaxUnpool1d", "MaxUnpool2d",
})

# losses and the arguments (keyword, positional index) that hold tensors
LOSS_WEIGHT_ARGS = {
    "CrossEntropyLoss": (("weight", 0),),
    "NLLLoss": (("weight", 0),),
    "BCELoss": (("weight", 0),),
    "BCEWithLogitsLoss": (("weight", 0), ("pos_weight", 4)),
    "MultiLabelSoftMarginLoss": (("weight", 0),),
    "MultiMarginLoss": (("weight", 2),),
    "NLLLoss2d": (("weight", 0),),
}

# attributes of tensors that NumPy arrays, lists, dicts and numbers lack: code under
# `if hasattr(x, "cpu"):` never runs for those, and `isinstance(x, <a tensor type>)` says the same
TENSOR_ONLY_ATTRIBUTES = frozenset({"cpu", "cuda", "to", "numpy", "detach", "device", "is_cuda", "pin_memory"})
# attributes only a torch.Tensor has (not a NumPy array, a list or an nn.Module): using one
# shows that a library function's parameter is a tensor (library mode)
TENSOR_PROOF_ATTRIBUTES = frozenset({
    "unsqueeze", "permute", "masked_fill", "masked_fill_", "dim", "numel", "contiguous", "expand",
    "expand_as", "view_as", "narrow", "index_select", "type_as", "new_zeros", "new_ones", "new_empty",
    "new_full", "new_tensor", "unbind", "is_floating_point", "element_size", "is_cuda", "softmax",
    "log_softmax", "masked_select", "scatter_", "scatter_add_", "index_add_", "index_put_", "detach",
})
# methods only a tensor has when called (NumPy's `size` is an attribute)
TENSOR_PROOF_METHODS = frozenset({"size"})
TENSOR_TESTS = frozenset({"torch.is_tensor"})  # `torch.is_tensor(x)` says x is a tensor
TENSOR_TYPES = frozenset({"torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter",
                          "torch.LongTensor", "torch.FloatTensor"})

# containers that register what they hold
REGISTERING_CONTAINERS = frozenset({"torch.nn.ModuleList", "torch.nn.ModuleDict",
                                    "torch.nn.Sequential", "torch.nn.ParameterList",
                                    "torch.nn.ParameterDict"})

PARAMETER = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})

# wrappers that scatter inputs to the devices themselves (CPU inputs are fine)
SCATTERING_WRAPPERS = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DataParallel"})
# DistributedDataParallel moves its inputs to device_ids[0] itself, but only when device_ids is given
DDP_WRAPPERS = frozenset({"torch.nn.parallel.DistributedDataParallel", "torch.nn.DistributedDataParallel"})
# wrappers that hold the module where it already is
WRAPPERS = DDP_WRAPPERS | frozenset({"torch.compile",
                      "torch.jit.script", "torch.jit.trace", "torch.nn.SyncBatchNorm.convert_sync_batchnorm"})

# module methods that register state under a name
BUFFER_REGISTRATIONS = frozenset({"register_buffer", "register_parameter"})
SUBMODULE_REGISTRATIONS = frozenset({"add_module", "register_module"})
# module methods that run the module on their arguments
MODULE_CALL_METHODS = frozenset({"forward", "generate", "predict", "encode", "decode", "__call__"})
# module methods that give (iterators of) its parameters and buffers
MODULE_STATE_METHODS = frozenset({"parameters", "named_parameters", "buffers", "state_dict", "children", "modules"})
PARAMETER_ITERATORS = frozenset({"parameters", "buffers"})

# module methods returning the module itself (so `model.eval().to(d)` chains work)
MODULE_SELF_METHODS = frozenset({"train", "eval", "half", "float", "double", "bfloat16",
                                 "requires_grad_", "apply", "zero_grad_", "share_memory",
                                 "to_empty", "type"})

# --- data --------------------------------------------------------------------------------

LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader",
                     "torch_geometric.loader.DataLoader", "monai.data.DataLoader"})
DATASETS = frozenset({
    "torch.utils.data.TensorDataset", "torch.utils.data.Subset",
    "torch.utils.data.ConcatDataset", "torch.utils.data.random_split",
    "torch.utils.data.dataset.TensorDataset", "torchvision.datasets.*",
    "torchtext.datasets.*", "torchaudio.datasets.*",
})
# library datasets, by their last name: views of another dataset, concatenations, tensor datasets
DATASET_VIEWS = frozenset({"Subset", "random_split"})
DATASET_CONCATENATIONS = frozenset({"ConcatDataset"})
TENSOR_DATASETS = frozenset({"TensorDataset"})
DATASET_BASES = frozenset({"torch.utils.data.Dataset", "torch.utils.data.IterableDataset",
                           "torch.utils.data.dataset.Dataset"})

# iterables that yield what they wrap
PASS_THROUGH_ITERABLES = frozenset({"tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm",
                                    "tqdm.std.tqdm", "tqdm", "iter", "rich.progress.track",
                                    "itertools.islice", "reversed", "*.tqdm"})
# list methods that add members
LIST_GROWING_METHODS = frozenset({"append", "extend", "insert"})

# --- optimizers --------------------------------------------------------------------------

OPTIMIZERS = frozenset({"torch.optim.*", "transformers.AdamW", "bitsandbytes.optim.*",
                        "apex.optimizers.*", "timm.optim.*"})
NOT_OPTIMIZERS = frozenset({"torch.optim.lr_scheduler.*", "torch.optim.swa_utils.*"})
# optimizers that create their per-parameter state in __init__, on the parameters' device
EAGER_STATE_OPTIMIZERS = frozenset({"torch.optim.Adagrad"})

# --- canonical names ---------------------------------------------------------------------

# modules commonly reached under other names, and the name the tables use for them
CANONICAL_PREFIXES = (
    ("torch.nn.modules.loss.", "torch.nn."),
    ("torch.nn.modules.", "torch.nn."),
    ("torch.utils.data.dataloader.", "torch.utils.data."),
    ("torch.utils.data.dataset.", "torch.utils.data."),
    ("pytorch_lightning.core.module.", "pytorch_lightning."),
    ("lightning.pytorch.", "lightning."),
    ("transformers.models.auto.", "transformers."),
)

# --- loading -----------------------------------------------------------------------------

CHECKPOINT_LOADERS = frozenset({"torch.load", "torch.hub.load_state_dict_from_url",
                                "torch.utils.model_zoo.load_url"})
CHECKPOINT_SAVERS = frozenset({"torch.save"})
# checkpoint handlers that write checkpoints into the directory they are given first (ignite's
# `ModelCheckpoint(dirname, ...)` / `DiskSaver(dirname)`, Lightning's `ModelCheckpoint(dirpath=...)`)
# on the machine that runs the training (DEV201: a later load from that directory reads them)
CHECKPOINT_DIRECTORY_WRITERS = frozenset({
    "ignite.handlers.ModelCheckpoint", "ignite.handlers.checkpoint.ModelCheckpoint",
    "ignite.handlers.DiskSaver", "ignite.handlers.checkpoint.DiskSaver",
    "pytorch_lightning.callbacks.ModelCheckpoint", "lightning.pytorch.callbacks.ModelCheckpoint",
    "pytorch_lightning.callbacks.model_checkpoint.ModelCheckpoint",
    "lightning.pytorch.callbacks.model_checkpoint.ModelCheckpoint",
})
# where the official weights are published: torchvision and the hub save them from CPU
# tensors and load them without `map_location` themselves (DEV201)
CPU_WEIGHT_URLS = ("https://download.pytorch.org/", "http://download.pytorch.org/")
# a release asset of a published package (`https://github.com/<owner>/<repo>/releases/download/...`):
# weights published for every machine, which the package itself loads without `map_location`
RELEASE_WEIGHT_URLS = (("https://github.com/", "/releases/download/"), ("http://github.com/", "/releases/download/"))
# words in the path of a checkpoint whose state holds no CUDA tensor, so it loads anywhere
# (DEV201): RNG states (`torch.cuda.get_rng_state_all()` returns CPU tensors), LR schedulers
# and GradScaler (`state_dict()` of both holds Python numbers)
HOST_STATE_FILE_WORDS = ("rng", "random_state", "sched", "scaler")
