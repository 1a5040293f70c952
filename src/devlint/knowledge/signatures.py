"""Positional signatures of the outside calls whose arguments rules read.

Rules ask a `Site` for an argument by parameter name (`site.argument("num_workers")`); a
positional argument is found through these tables, so no rule re-binds a call by hand.
"""

from __future__ import annotations

_DATALOADER = ("dataset", "batch_size", "shuffle", "sampler", "batch_sampler", "num_workers",
               "collate_fn", "pin_memory", "drop_last", "timeout", "worker_init_fn",
               "multiprocessing_context", "generator")
_DATA_PARALLEL = ("module", "device_ids", "output_device", "dim")
_DDP = ("module", "device_ids", "output_device", "dim", "broadcast_buffers")

POSITIONAL: dict[str, tuple[str, ...]] = {
    "torch.utils.data.DataLoader": _DATALOADER,
    "torch.utils.data.dataloader.DataLoader": _DATALOADER,
    "monai.data.DataLoader": _DATALOADER,
    "torch_geometric.loader.DataLoader": ("dataset", "batch_size", "shuffle", "follow_batch", "exclude_keys"),
    "torch.nn.DataParallel": _DATA_PARALLEL,
    "torch.nn.parallel.DataParallel": _DATA_PARALLEL,
    "torch.nn.parallel.DistributedDataParallel": _DDP,
    "torch.nn.DistributedDataParallel": _DDP,
    "torch.load": ("f", "map_location", "pickle_module"),
    "torch.hub.load_state_dict_from_url": ("url", "model_dir", "map_location", "progress"),
    "torch.utils.model_zoo.load_url": ("url", "model_dir", "map_location", "progress"),
    "torch.cuda.set_device": ("device",),
}


def positional_parameters(callee: str) -> tuple[str, ...]:
    return POSITIONAL.get(callee, ())
