"""What the libraries around PyTorch make and accept: Hugging Face, torchvision, timm,
accelerate, Lightning, and the host-only consumers (NumPy, scikit-learn, matplotlib).

Data only. A trailing `*` matches any attribute below that prefix; a leading `*.` matches the
final attribute of any name (`*.from_pretrained`).
"""

# calls that make modules with weights (on the host unless device_map= says otherwise)
MODEL_CONSTRUCTORS = frozenset({
    "torchvision.models.*", "timm.create_model", "torch.hub.load",
    "transformers.*.from_pretrained", "transformers.*.from_config",
    "transformers.pipeline_", "sentence_transformers.SentenceTransformer",
    "diffusers.*.from_pretrained", "peft.get_peft_model", "peft.PeftModel.from_pretrained",
    "peft.prepare_model_for_kbit_training",
    # torchmetrics metrics are modules whose state tensors start on the CPU (their functional
    # API, torchmetrics.functional.*, is lower-case and not matched)
    "torchmetrics.[A-Z]*", "torchmetrics.classification.[A-Z]*", "torchmetrics.regression.[A-Z]*",
    "torchmetrics.aggregation.[A-Z]*", "torchmetrics.retrieval.[A-Z]*", "torchmetrics.text.[A-Z]*",
    "torchmetrics.image.[A-Z]*", "torchmetrics.audio.[A-Z]*", "torchmetrics.detection.[A-Z]*",
    "torchmetrics.segmentation.[A-Z]*",
})

# model constructors whose result is already placed (they take a `device` argument)
PLACING_CONSTRUCTORS = frozenset({"sentence_transformers.SentenceTransformer", "transformers.pipeline"})

# fields of a generation pipeline's output (diffusers, transformers pipelines): PIL images or
# NumPy arrays unless the call asks for `output_type="pt"`, so not known to be tensors
PIPELINE_OUTPUT_FIELDS = frozenset({"images", "audios", "videos", "frames", "nsfw_content_detected"})

# library classes that are nn.Modules (bases of user classes)
MODULE_BASES = frozenset({
    "torch.nn.Module", "pytorch_lightning.LightningModule", "lightning.LightningModule",
    "lightning.pytorch.LightningModule", "transformers.PreTrainedModel",
    "transformers.modeling_utils.PreTrainedModel", "torch.nn.Sequential",
    "torch.nn.ModuleList", "torch.nn.ModuleDict", "timm.models.*", "torchvision.models.*",
    "torchmetrics.Metric", "torchmetrics.metric.Metric",
    # graph and geometry libraries: their layers (MessagePassing, GCNConv, ...) are modules
    "torch_geometric.nn.*", "torch_geometric_temporal.nn.*", "dgl.nn.*", "torch_sparse.*",
    "transformers.*PreTrainedModel", "transformers.modeling_utils.*", "timm.layers.*", "diffusers.*Mixin",
    "diffusers.models.*",
})
# library classes that have a `forward` but are not modules (a class on another base with a
# `forward` method is taken for a module: analysis/classes.py)
NOT_MODULE_BASES = frozenset({"torch.autograd.Function", "torch.autograd.function.*"})

# module bases whose hooks receive batches already placed by the framework
FRAMEWORK_MODULE_BASES = frozenset({
    "pytorch_lightning.LightningModule", "lightning.LightningModule",
    "lightning.pytorch.LightningModule", "pytorch_lightning.core.LightningModule",
})

TOKENIZERS = frozenset({
    "transformers.AutoTokenizer.from_pretrained", "transformers.*Tokenizer.from_pretrained",
    "transformers.*TokenizerFast.from_pretrained", "transformers.AutoProcessor.from_pretrained",
    "transformers.*Processor.from_pretrained", "transformers.AutoFeatureExtractor.from_pretrained",
    "transformers.AutoImageProcessor.from_pretrained", "tiktoken.get_encoding",
})

# tokenizer methods that return a BatchEncoding (with return_tensors="pt": host tensors)
TOKENIZER_ENCODING_METHODS = frozenset({"__call__", "batch_encode_plus", "encode_plus",
                                        "pad", "prepare_seq2seq_batch", "apply_chat_template"})
TOKENIZER_TENSOR_METHODS = frozenset({"encode"})
TOKENIZER_TEXT_METHODS = frozenset({"decode", "batch_decode", "convert_ids_to_tokens", "tokenize"})

# the ones that quantise it (bitsandbytes models always get accelerate's input-moving hooks)
QUANTIZE_KWARGS = frozenset({"load_in_8bit", "load_in_4bit", "quantization_config"})
EIGHT_BIT_KWARGS = frozenset({"load_in_8bit"})  # 8-bit models: transformers refuses `.to()`
# device_map values that let accelerate split the model over several devices
DEVICE_MAP_STRATEGIES = frozenset({"auto", "balanced", "balanced_low_0", "sequential"})

# calls that wrap a model without moving it (adapters are built on the base weights' device)
MODEL_WRAPPERS = frozenset({"peft.get_peft_model", "peft.PeftModel.from_pretrained",
                            "peft.prepare_model_for_kbit_training"})

# Hugging Face `datasets`: what they yield depends on a format (`with_format("torch",
# device=...)`) that may be set anywhere, so their rows are of unknown placement
HF_DATASETS = frozenset({"datasets.load_dataset", "datasets.load_from_disk", "datasets.Dataset.*",
                         "datasets.DatasetDict*", "datasets.IterableDataset.*",
                         "datasets.concatenate_datasets", "datasets.interleave_datasets"})
# methods that format a `datasets` object's rows (`with_format("torch", device=...)`)
HF_FORMAT_METHODS = frozenset({"with_format", "set_format"})

# --- frameworks that place data and models themselves -------------------------------------

ACCELERATORS = frozenset({"accelerate.Accelerator", "lightning.Fabric",
                          "lightning.fabric.Fabric", "lightning_fabric.Fabric"})
ACCELERATOR_PREPARE = frozenset({"prepare", "prepare_model", "prepare_data_loader",
                                 "setup", "setup_dataloaders", "setup_module"})
MANAGING_TRAINERS = frozenset({
    "transformers.Trainer", "transformers.Seq2SeqTrainer", "trl.*Trainer",
    "pytorch_lightning.Trainer", "lightning.Trainer", "lightning.pytorch.Trainer",
})

# --- process environment (DEV203) ----------------------------------------------------------

# calls that set environment variables (`os.environ[k] = v` is an assignment, handled apart)
ENV_WRITERS = frozenset({"os.environ.update", "os.environ.setdefault", "os.putenv",
                         "os.environ.__setitem__"})
ENV_UPDATES = frozenset({"os.environ.update"})  # a mapping of names to values
ENV_WRITERS_RETURNING_VALUE = frozenset({"os.environ.setdefault"})
ENV_MAPPINGS = frozenset({"os.environ"})  # `os.environ[key] = value`
# multiprocessing start method (DEV110: "spawn" / "forkserver" workers start fresh)
START_METHOD_SETTERS = frozenset({"*.set_start_method"})

# --- host-only consumers (DEV109) ---------------------------------------------------------

NUMPY = frozenset({"numpy.*"})
# NumPy's constants: Python floats
NUMPY_CONSTANTS = frozenset({"numpy.e", "numpy.pi", "numpy.inf", "numpy.nan", "numpy.euler_gamma", "numpy.newaxis"})
# element-wise functions: of Python numbers a number, of a CPU tensor a CPU tensor (through
# `__array_wrap__`), of a CUDA tensor a crash (DEV109)
NUMPY_UFUNCS = frozenset({
    "numpy.log", "numpy.log2", "numpy.log10", "numpy.log1p", "numpy.exp", "numpy.exp2", "numpy.expm1",
    "numpy.sqrt", "numpy.square", "numpy.abs", "numpy.absolute", "numpy.sign", "numpy.sin", "numpy.cos",
    "numpy.tan", "numpy.tanh", "numpy.arctan", "numpy.arcsin", "numpy.arccos", "numpy.floor", "numpy.ceil",
    "numpy.round", "numpy.rint", "numpy.power", "numpy.maximum", "numpy.minimum", "numpy.clip",
    "numpy.reciprocal", "numpy.negative", "numpy.float32", "numpy.float64", "numpy.int32", "numpy.int64",
})
# reductions: of numbers (or a tuple of them) a number
NUMPY_REDUCTIONS = frozenset({"numpy.prod", "numpy.sum", "numpy.mean", "numpy.std", "numpy.var", "numpy.max",
                              "numpy.min", "numpy.median", "numpy.amax", "numpy.amin", "numpy.cumprod"})
# random draws that are one number unless given a size (or, for rand / randn / random, dimensions)
NUMPY_RANDOM_DRAWS = frozenset({
    "numpy.random.beta", "numpy.random.binomial", "numpy.random.choice", "numpy.random.exponential",
    "numpy.random.gamma", "numpy.random.normal", "numpy.random.poisson", "numpy.random.rand",
    "numpy.random.randint", "numpy.random.randn", "numpy.random.random", "numpy.random.random_sample",
    "numpy.random.uniform", "numpy.random.laplace", "numpy.random.lognormal", "numpy.random.geometric",
})
HOST_ONLY_CALLS = frozenset({
    "numpy.*", "sklearn.metrics.*", "matplotlib.pyplot.*", "scipy.*", "pandas.DataFrame",
    "pandas.Series", "seaborn.*", "PIL.Image.fromarray", "cv2.*",
})
# command-line parsers: the integer defaults of their options are known values, so
# `DataLoader(..., num_workers=args.workers)` with `default=4` has 4 workers (DEV110)
ARGUMENT_PARSERS = frozenset({"argparse.ArgumentParser"})
# an object of the keyword arguments it is built with (a test's `args = SimpleNamespace(device="cpu")`)
NAMESPACES = frozenset({"types.SimpleNamespace", "argparse.Namespace"})
ARGPARSE_GROUPS = frozenset({"add_argument_group", "add_mutually_exclusive_group"})
ARGPARSE_PARSERS = frozenset({"parse_args", "parse_known_args"})

# matplotlib calls that return axes, and the axes methods that read their data arguments into
# NumPy (`fig, ax = plt.subplots(); ax.plot(t)` fails on a CUDA tensor like `plt.plot(t)`)
AXES_MAKERS = frozenset({"matplotlib.pyplot.subplots", "matplotlib.pyplot.subplot", "matplotlib.pyplot.gca",
                         "matplotlib.pyplot.axes"})
FIGURE_AND_AXES_MAKERS = frozenset({"matplotlib.pyplot.subplots"})  # return (figure, axes)
# matplotlib's object-oriented API: figures, and the figure methods that give axes or subfigures
FIGURE_MAKERS = frozenset({"matplotlib.pyplot.figure", "matplotlib.pyplot.gcf", "matplotlib.figure.Figure"})
FIGURE_AXES_METHODS = frozenset({"add_subplot", "subplots", "gca", "add_axes", "subplot_mosaic"})
FIGURE_SUBFIGURE_METHODS = frozenset({"subfigures", "add_subfigure"})
AXES_PLOTTING = frozenset({"plot", "scatter", "hist", "hist2d", "imshow", "matshow", "bar", "barh", "step",
                           "stem", "fill_between", "errorbar", "boxplot", "violinplot", "pie", "contour",
                           "contourf", "pcolormesh", "semilogx", "semilogy", "loglog", "stackplot"})
# numpy functions that are fine with any argument (they do not read tensor data)
HOST_ONLY_EXCEPTIONS = frozenset({"numpy.random.seed", "numpy.random.*", "numpy.set_printoptions",
                                  "numpy.dtype", "numpy.float32", "numpy.int64",
                                  "matplotlib.pyplot.figure", "matplotlib.pyplot.show",
                                  "matplotlib.pyplot.savefig", "matplotlib.pyplot.title",
                                  "matplotlib.pyplot.xlabel", "matplotlib.pyplot.ylabel",
                                  "matplotlib.pyplot.legend", "matplotlib.pyplot.subplots",
                                  "matplotlib.pyplot.close", "matplotlib.pyplot.tight_layout",
                                  # read only shape / slices, or catch the conversion error
                                  "numpy.array_equal", "numpy.array_split", "numpy.split",
                                  "numpy.ndim", "numpy.shape", "numpy.size", "numpy.nonzero",
                                  "numpy.squeeze", "numpy.isscalar", "numpy.iterable",
                                  "numpy.printoptions", "numpy.errstate", "numpy.seterr",
                                  "numpy.finfo", "numpy.iinfo", "numpy.dtype",
                                  "matplotlib.pyplot.grid", "matplotlib.pyplot.xlim",
                                  "matplotlib.pyplot.ylim", "matplotlib.pyplot.subplot",
                                  "matplotlib.pyplot.axis", "matplotlib.pyplot.suptitle",
                                  "matplotlib.pyplot.xscale", "matplotlib.pyplot.yscale",
                                  "matplotlib.pyplot.colorbar", "matplotlib.pyplot.gcf",
                                  "matplotlib.pyplot.gca", "matplotlib.pyplot.style.*",
                                  "matplotlib.pyplot.rcParams", "matplotlib.pyplot.ion",
                                  "matplotlib.pyplot.ioff", "matplotlib.pyplot.pause",
                                  "matplotlib.pyplot.clf", "matplotlib.pyplot.cla",
                                  "matplotlib.pyplot.draw", "matplotlib.pyplot.switch_backend",
                                  "matplotlib.pyplot.get_cmap", "matplotlib.pyplot.cm.*",
                                  "sklearn.metrics.make_scorer", "sklearn.metrics.get_scorer",
                                  "pandas.set_option"})

NUMPY_ARRAY_MAKERS = frozenset({"numpy.array", "numpy.zeros", "numpy.ones", "numpy.arange",
                                "numpy.asarray", "numpy.empty", "numpy.random.rand",
                                "numpy.random.randn", "numpy.random.randint", "numpy.load",
                                "numpy.stack", "numpy.concatenate", "numpy.full",
                                "numpy.linspace", "numpy.random.normal", "numpy.eye"})

# --- Python itself -------------------------------------------------------------------------

BUILTINS = frozenset({"builtins.*"})
COPIES = frozenset({"copy.deepcopy"})
PARTIALS = frozenset({"functools.partial"})

# functions of tensor libraries that work on their tensor arguments where those are and return
# tensors there (like torch's own): their arguments meet, their result is on the inputs' device
DEVICE_FOLLOWING_FUNCTIONS = frozenset({
    "torch_geometric.utils.*", "torch_scatter.*", "torch_sparse.*", "torch_cluster.*",
    "einops.rearrange", "einops.repeat", "einops.reduce", "einops.einsum", "einops.pack", "einops.unpack",
    "kornia.geometry.*", "kornia.filters.*", "kornia.color.*", "torchvision.ops.*",
    "torchaudio.functional.*", "torchvision.transforms.functional.*", "torchvision.transforms.v2.functional.*",
})
