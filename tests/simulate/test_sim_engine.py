"""The simulation engine: a CPU tensor tagged as "cuda:0" must behave like a GPU tensor in every
way a training script can observe, and a mismatch must raise what a CUDA build raises.

Each feature is tested both ways: the correct program runs clean (no false crash), and the
buggy variant raises with PyTorch's wording.
"""

from __future__ import annotations

import copy
import io

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from devlint.simulate import tags  # noqa: E402
from devlint.simulate.budget import Limits  # noqa: E402
from devlint.simulate.errors import SimulatedDeviceError, SimulatedHostError  # noqa: E402
from devlint.simulate.session import Simulation  # noqa: E402

MIXED = "Expected all tensors to be on the same device"


def on_gpu(t) -> bool:
    return t.device.type == "cuda"


# --------------------------------------------------------------------------- torch.cuda


def test_cuda_reports_one_available_gpu(sim):
    assert torch.cuda.is_available()
    assert torch.cuda.device_count() == 1
    assert torch.cuda.current_device() == 0
    assert "simulated" in torch.cuda.get_device_name(0)
    assert torch.cuda.get_device_properties(0).total_memory > 0
    torch.cuda.synchronize()
    torch.cuda.manual_seed_all(0)
    torch.cuda.empty_cache()
    assert torch.cuda.memory_allocated() == 0


def test_everything_is_restored_after_the_simulation():
    with Simulation():
        x = torch.zeros(2, device="cuda")
        assert x.is_cuda
    assert not torch.cuda.is_available()
    assert torch.Tensor.device is torch._C.TensorBase.device
    assert torch.zeros(1).device.type == "cpu"
    assert "device" not in torch.Tensor.__dict__
    with pytest.raises((RuntimeError, AssertionError)):
        torch.zeros(1, device="cuda")


# --------------------------------------------------------------------------- moves and aliasing


def test_tensor_to_copies_and_never_tags_in_place(sim):
    x = torch.randn(3)
    y = x.to("cuda")
    assert on_gpu(y) and not on_gpu(x)
    assert y.data_ptr() != x.data_ptr()
    assert y.to("cuda") is y
    assert y.cuda() is y
    back = y.cpu()
    assert back.device.type == "cpu" and on_gpu(y)
    assert x.cpu() is x
    assert torch.equal(back, x)


def test_discarded_to_leaves_the_tensor_on_the_cpu(sim):
    x = torch.randn(2, 4)
    x.to("cuda")  # Tensor.to returns a copy
    layer = nn.Linear(4, 2).to("cuda")
    with pytest.raises(SimulatedDeviceError, match=MIXED):
        layer(x)


def test_to_other_tensor_dtype_and_type_as(sim):
    ref = torch.zeros(2, dtype=torch.float64, device="cuda")
    x = torch.ones(2)
    assert on_gpu(x.to(ref)) and x.to(ref).dtype == torch.float64
    assert on_gpu(x.type_as(ref))
    assert x.to(torch.float16).device.type == "cpu"
    g = ref.to(torch.float32)
    assert on_gpu(g) and g.dtype == torch.float32
    assert ref.type() == "torch.cuda.DoubleTensor"
    assert on_gpu(x.type("torch.cuda.FloatTensor"))


def test_views_data_detach_and_parameters_share_the_device(sim):
    layer = nn.Linear(3, 3)
    weight, data, view = layer.weight, layer.weight.data, layer.weight[0]
    layer.to("cuda")
    # Module._apply swaps param.data: the Parameter object follows, the old storage does not
    assert on_gpu(weight) and weight is layer.weight
    assert not on_gpu(data) and not on_gpu(view)
    assert on_gpu(layer.weight.data) and on_gpu(layer.weight.detach()) and on_gpu(layer.weight.t())
    assert on_gpu(layer.weight[1:]) and on_gpu(layer.weight.view(-1))
    assert all(on_gpu(v) for v in layer.state_dict().values())


def test_state_dict_aliases_keep_the_device(sim):
    model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)).to("cuda")
    state = model.state_dict()
    assert {k: on_gpu(v) for k, v in state.items()} == {k: True for k in state}
    cpu_state = {k: v.cpu() for k, v in state.items()}
    fresh = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    fresh.load_state_dict(state)  # copy_ into CPU parameters: they stay on the CPU
    assert not any(on_gpu(p) for p in fresh.parameters())
    assert not any(on_gpu(v) for v in cpu_state.values())


def test_gradients_flow_back_across_a_move(sim):
    x = torch.randn(4, 3, requires_grad=True)  # a CPU leaf
    layer = nn.Linear(3, 1).to("cuda")
    layer(x.to("cuda")).sum().backward()
    assert x.grad is not None and x.grad.device.type == "cpu"
    assert on_gpu(layer.weight.grad)


def test_gpu_to_cpu_move_backward_gives_gpu_gradients(sim):
    layer = nn.Linear(3, 2).to("cuda")
    out = layer(torch.randn(5, 3, device="cuda")).cpu()
    (out * torch.ones(5, 2)).sum().backward()
    assert on_gpu(layer.weight.grad)


# --------------------------------------------------------------------------- factories


def test_factories_with_a_gpu_device(sim):
    assert on_gpu(torch.zeros(2, device="cuda"))
    assert on_gpu(torch.randn(2, 2, device=torch.device("cuda", 0)))
    assert on_gpu(torch.arange(3, device="cuda:0"))
    assert on_gpu(torch.tensor([1, 2], device="cuda"))
    assert on_gpu(torch.full((2,), 3.0, device="cuda"))
    assert on_gpu(torch.zeros_like(torch.zeros(2, device="cuda")))
    cpu = torch.randn(2)
    assert on_gpu(torch.as_tensor(cpu, device="cuda")) and not on_gpu(cpu)
    assert on_gpu(cpu.new_zeros(2, device="cuda"))
    gpu = torch.randn(2, device="cuda")
    assert on_gpu(gpu.new_zeros(3)) and on_gpu(gpu.new_tensor([1.0]))
    assert gpu.new_zeros(3, device="cpu").device.type == "cpu"
    assert torch.zeros_like(gpu, device="cpu").device.type == "cpu"


def test_factory_without_device_is_on_the_cpu(sim):
    h = torch.randn(2, 3, device="cuda")
    with pytest.raises(SimulatedDeviceError, match=MIXED):
        h + torch.zeros(2, 3)


def test_only_one_gpu_exists(sim):
    from devlint.simulate.errors import SimulationUnsupported

    with pytest.raises(SimulationUnsupported, match="cuda:1"):
        torch.zeros(2, device="cuda:1")


# --------------------------------------------------------------------------- errors and their wording


def test_linear_error_names_the_argument_and_the_kernel(sim):
    layer = nn.Linear(4, 2).to("cuda")
    with pytest.raises(RuntimeError) as info:
        layer(torch.randn(3, 4))
    assert str(info.value) == (
        "Expected all tensors to be on the same device, but got mat1 is on cpu, different from "
        "other tensors on cuda:0 (when checking argument in method wrapper_CUDA_addmm)"
    )


def test_pointwise_error_uses_tensor_iterator_wording(sim):
    with pytest.raises(RuntimeError) as info:
        torch.randn(3, device="cuda") + torch.randn(3)
    assert str(info.value) == (
        "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
    )


def test_zero_dim_cpu_tensors_are_allowed_in_pointwise_ops(sim):
    x = torch.randn(3, device="cuda")
    y = x * torch.tensor(2.0) + torch.tensor(1.0)
    assert on_gpu(y)
    assert on_gpu(torch.where(x > 0, x, torch.tensor(0.0)))
    with pytest.raises(SimulatedDeviceError):
        x * torch.tensor([2.0])  # one element, but not zero-dimensional


def test_cpu_index_tensors_are_allowed_for_gpu_indexing(sim):
    x = torch.randn(4, 3, device="cuda")
    assert on_gpu(x[torch.tensor([0, 2])])
    x[torch.tensor([True, False, True, False])] = 0.0
    with pytest.raises(SimulatedDeviceError, match="indices should be either on cpu"):
        torch.randn(4)[torch.tensor([1], device="cuda")]


def test_embedding_with_cpu_indices(sim):
    emb = nn.Embedding(10, 4).to("cuda")
    with pytest.raises(SimulatedDeviceError, match="got index is on cpu.*wrapper_CUDA__index_select"):
        emb(torch.tensor([1, 2]))
    assert on_gpu(emb(torch.tensor([1, 2], device="cuda")))


def test_loss_weight_left_on_the_cpu(sim):
    criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 1.0]))
    logits = torch.randn(4, 3, device="cuda")
    target = torch.tensor([0, 1, 2, 1], device="cuda")
    with pytest.raises(SimulatedDeviceError, match="got weight is on cpu.*nll_loss"):
        criterion(logits, target)
    criterion.to("cuda")
    assert on_gpu(criterion(logits, target))


def test_masked_fill_with_a_cpu_mask(sim):
    scores = torch.randn(2, 3, device="cuda")
    with pytest.raises(SimulatedDeviceError, match="expected self and mask to be on the same device"):
        scores.masked_fill(torch.ones(2, 3, dtype=torch.bool), 0.0)


def test_cat_of_mixed_devices(sim):
    with pytest.raises(SimulatedDeviceError, match=MIXED):
        torch.cat([torch.randn(2, device="cuda"), torch.randn(2)])


def test_numpy_on_a_gpu_tensor(sim):
    x = torch.randn(3, device="cuda")
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        x.numpy()
    assert isinstance(SimulatedHostError("m"), TypeError)
    assert x.cpu().tolist() == x.tolist()
    assert isinstance(x.sum().item(), float)


def test_errors_are_runtime_errors_a_script_can_catch(sim):
    try:
        torch.randn(2, device="cuda") + torch.randn(2)
    except RuntimeError as exc:
        assert exc.tensors  # carries the tensors involved, for the classifier
    else:  # pragma: no cover
        pytest.fail("no error raised")


def test_error_in_backward_is_raised(sim):
    weight = torch.randn(3, requires_grad=True, device="cuda")
    hook_value = torch.ones(3)  # CPU

    def bad_hook(grad):
        return grad * hook_value  # a CPU tensor meets the GPU gradient inside backward

    weight.register_hook(bad_hook)
    with pytest.raises(RuntimeError, match=MIXED):
        (weight * 2).sum().backward()


# --------------------------------------------------------------------------- deepcopy and checkpoints


def test_deepcopy_keeps_the_device(sim):
    model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)).to("cuda")
    clone = copy.deepcopy(model)
    assert all(on_gpu(p) for p in clone.parameters()) and all(on_gpu(b) for b in clone.buffers())
    t = torch.randn(3, device="cuda", requires_grad=True)
    assert on_gpu(copy.deepcopy(t))
    cpu_copy = copy.deepcopy(nn.Linear(2, 2))
    assert not any(on_gpu(p) for p in cpu_copy.parameters())


def _saved(obj) -> io.BytesIO:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return buffer


def test_gpu_checkpoint_loads_on_the_gpu_without_map_location(sim):
    model = nn.Linear(3, 2).to("cuda")
    state = torch.load(_saved(model.state_dict()))
    assert all(on_gpu(v) for v in state.values())
    whole = torch.load(_saved({"w": model.weight.detach(), "step": 3}), weights_only=True)
    assert on_gpu(whole["w"]) and whole["step"] == 3


def test_map_location_decides_where_a_checkpoint_lands(sim):
    saved = _saved(nn.Linear(3, 2).to("cuda").state_dict()).getvalue()
    assert not any(on_gpu(v) for v in torch.load(io.BytesIO(saved), map_location="cpu").values())
    assert all(on_gpu(v) for v in torch.load(io.BytesIO(saved), map_location="cuda").values())
    on_device = torch.load(io.BytesIO(saved), map_location=torch.device("cuda"))
    assert all(on_gpu(v) for v in on_device.values())
    mapped = torch.load(io.BytesIO(saved), map_location=lambda storage, loc: storage)
    assert not any(on_gpu(v) for v in mapped.values())
    cpu_saved = _saved(nn.Linear(3, 2).state_dict())
    assert all(on_gpu(v) for v in torch.load(cpu_saved, map_location="cuda").values())


def test_a_gpu_checkpoint_loaded_into_a_cpu_model_still_crashes_on_gpu_inputs(sim):
    state = torch.load(_saved(nn.Linear(3, 2).to("cuda").state_dict()))
    model = nn.Linear(3, 2)
    model.load_state_dict(state)  # copies into the CPU parameters
    with pytest.raises(SimulatedDeviceError):
        model(torch.randn(1, 3, device="cuda"))


def test_optimizer_state_round_trip(sim):
    model = nn.Linear(3, 1).to("cuda")
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.randn(4, 3, device="cuda")).sum().backward()
    optimizer.step()
    checkpoint = torch.load(_saved(optimizer.state_dict()), map_location="cuda")
    resumed = torch.optim.Adam(model.parameters())
    resumed.load_state_dict(checkpoint)
    model(torch.randn(4, 3, device="cuda")).sum().backward()
    resumed.step()
    assert all(on_gpu(s["exp_avg"]) for s in resumed.state.values())


# --------------------------------------------------------------------------- optimizers


@pytest.mark.parametrize(
    "make",
    [
        lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
        lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, foreach=False),
        lambda p: torch.optim.Adam(p),
        lambda p: torch.optim.Adam(p, foreach=False),
        lambda p: torch.optim.AdamW(p, foreach=True, amsgrad=True),
        lambda p: torch.optim.AdamW(p, fused=True),
        lambda p: torch.optim.RMSprop(p),
        lambda p: torch.optim.Adagrad(p),
    ],
    ids=["sgd-foreach", "sgd-single", "adam", "adam-single", "adamw-amsgrad", "adamw-fused", "rmsprop", "adagrad"],
)
def test_optimizers_step_on_the_gpu(sim, make):
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to("cuda")
    optimizer = make(model.parameters())
    for _ in range(2):
        loss = model(torch.randn(5, 4, device="cuda")).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    assert all(on_gpu(p) for p in model.parameters())


def test_adam_built_before_the_move_is_fine(sim):
    model = nn.Linear(4, 2)
    optimizer = torch.optim.Adam(model.parameters())  # lazy state: created on the first step
    model.to("cuda")
    model(torch.randn(3, 4, device="cuda")).sum().backward()
    optimizer.step()


def test_adagrad_built_before_the_move_crashes(sim):
    model = nn.Linear(4, 2)
    optimizer = torch.optim.Adagrad(model.parameters())  # eager state, on the CPU
    model.to("cuda")
    model(torch.randn(3, 4, device="cuda")).sum().backward()
    with pytest.raises(SimulatedDeviceError, match="same device"):
        optimizer.step()


def test_single_tensor_adagrad_before_the_move_crashes(sim):
    model = nn.Linear(4, 2)
    optimizer = torch.optim.Adagrad(model.parameters(), foreach=False)
    model.to("cuda")
    model(torch.randn(3, 4, device="cuda")).sum().backward()
    with pytest.raises(SimulatedDeviceError, match=MIXED):
        optimizer.step()


# --------------------------------------------------------------------------- AMP


def test_autocast_and_grad_scaler(sim):
    model = nn.Linear(4, 2).to("cuda")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda")
    assert scaler.is_enabled()
    for _ in range(2):
        with torch.autocast("cuda"):
            loss = model(torch.randn(3, 4, device="cuda")).sum()
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        scaler.step(optimizer)
        scaler.update()
    assert on_gpu(scaler._scale)


# --------------------------------------------------------------------------- DataParallel


def test_dataparallel_scatters_cpu_inputs(sim):
    model = nn.DataParallel(nn.Linear(4, 2)).cuda()
    out = model(torch.randn(3, 4))
    assert on_gpu(out)
    out.sum().backward()
    assert on_gpu(model.module.weight.grad)


def test_dataparallel_with_an_unmoved_module_crashes_like_pytorch(sim):
    model = nn.DataParallel(nn.Linear(4, 2))
    model.module.cpu()
    with pytest.raises(RuntimeError, match="module must have its parameters and buffers on device cuda:0"):
        model(torch.randn(3, 4))


# --------------------------------------------------------------------------- default device


def test_set_default_device(sim):
    torch.set_default_device("cuda")
    try:
        layer = nn.Linear(4, 2)
        x = torch.randn(3, 4)
        assert on_gpu(layer.weight) and on_gpu(x) and on_gpu(torch.tensor([1.0]))
        layer(x).sum().backward()
        assert on_gpu(layer.weight.grad)
        assert torch.randn(2, device="cpu").device.type == "cpu"
    finally:
        torch.set_default_device(None)


def test_device_context_manager(sim):
    with torch.device("cuda"):
        layer = nn.Linear(2, 2)
        ones = torch.ones(2)
    assert on_gpu(layer.weight) and on_gpu(ones)
    assert torch.ones(2).device.type == "cpu"


def test_default_device_does_not_leak_out_of_the_simulation():
    with Simulation():
        torch.set_default_device("cuda")
    assert torch.get_default_device().type == "cpu"


# --------------------------------------------------------------------------- packed sequences


def _packed_model():
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    lstm = nn.LSTM(4, 6, batch_first=True).to("cuda")
    x = torch.randn(3, 5, 4, device="cuda")
    return lstm, x, pack_padded_sequence, pad_packed_sequence


def test_packed_sequences_with_cpu_lengths(sim):
    lstm, x, pack, pad = _packed_model()
    packed = pack(x, torch.tensor([5, 3, 2]), batch_first=True, enforce_sorted=False)
    assert packed.batch_sizes.device.type == "cpu" and on_gpu(packed.data)
    out, (h, c) = lstm(packed)
    padded, lengths = pad(out, batch_first=True)
    assert lengths.device.type == "cpu" and on_gpu(padded) and on_gpu(h)
    padded[torch.arange(3), lengths - 1].sum().backward()
    assert on_gpu(lstm.weight_ih_l0.grad)


def test_packed_sequences_with_gpu_lengths_crash(sim):
    _, x, pack, _ = _packed_model()
    with pytest.raises(RuntimeError, match="'lengths' argument should be a 1D CPU int64 tensor"):
        pack(x, torch.tensor([5, 3, 2], device="cuda"), batch_first=True)


def test_lstm_with_a_cpu_hidden_state(sim):
    lstm = nn.LSTM(4, 6, batch_first=True).to("cuda")
    h0 = torch.zeros(1, 2, 6)
    with pytest.raises(SimulatedDeviceError, match="Input and hidden tensors are not at the same device"):
        lstm(torch.randn(2, 5, 4, device="cuda"), (h0, h0.clone()))
    out, _ = lstm(torch.randn(2, 5, 4, device="cuda"), (h0.cuda(), h0.cuda()))
    assert on_gpu(out)


def test_gru_with_unmoved_weights(sim):
    gru = nn.GRU(4, 6)
    with pytest.raises(SimulatedDeviceError, match="Input and parameter tensors are not at the same device"):
        gru(torch.randn(5, 2, 4, device="cuda"))


# --------------------------------------------------------------------------- DataLoader


def _dataset():
    from torch.utils.data import TensorDataset

    return TensorDataset(torch.randn(24, 4), torch.randint(0, 2, (24,)))


def test_loader_workers_and_pinned_memory(sim):
    from torch.utils.data import DataLoader

    model = nn.Linear(4, 2).to("cuda")
    seen = 0
    for x, y in DataLoader(_dataset(), batch_size=6, num_workers=2, pin_memory=True):
        assert x.device.type == "cpu" and x.is_pinned() is False
        loss = nn.functional.cross_entropy(model(x.to("cuda", non_blocking=True)), y.cuda(non_blocking=True))
        loss.backward()
        seen += 1
    assert seen == 4


def test_loader_worker_batches_are_cpu_tensors(sim):
    from torch.utils.data import DataLoader

    model = nn.Linear(4, 2).to("cuda")
    with pytest.raises(SimulatedDeviceError):
        for x, _ in DataLoader(_dataset(), batch_size=6, num_workers=2):
            model(x)


def test_max_batches_cuts_every_iteration():
    from torch.utils.data import DataLoader

    with Simulation(Limits(max_batches=2)) as simulation:
        loader = DataLoader(_dataset(), batch_size=4, shuffle=True)
        assert len(loader) == 2
        for _ in range(3):
            assert sum(1 for _ in loader) == 2
    assert simulation.state.batches == 6


def test_set_default_device_with_a_shuffling_loader(sim):
    from torch.utils.data import DataLoader

    torch.set_default_device("cuda")
    try:
        batches = list(DataLoader(_dataset(), batch_size=6, shuffle=True))
    finally:
        torch.set_default_device(None)
    assert len(batches) == 4


# --------------------------------------------------------------------------- modules


def test_lazy_modules_materialise_on_the_gpu(sim):
    model = nn.Sequential(nn.LazyLinear(3), nn.ReLU()).to("cuda")
    out = model(torch.randn(2, 5, device="cuda"))
    assert on_gpu(out) and on_gpu(model[0].weight)


def test_transformer_fast_path_and_training(sim):
    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    model = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).to("cuda")
    model.eval()
    with torch.no_grad():
        assert on_gpu(model(torch.randn(2, 5, 8, device="cuda")))
    model.train()
    model(torch.randn(2, 5, 8, device="cuda")).sum().backward()


def test_conv_batchnorm_pooling(sim):
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2)).to("cuda")
    model(torch.randn(2, 3, 8, 8, device="cuda")).mean().backward()
    assert on_gpu(model[1].running_mean)


def test_storage_tag_is_what_makes_a_tensor_gpu(sim):
    t = torch.randn(2)
    assert not tags.is_simulated(t)
    moved = t.cuda()
    assert tags.device_of(moved) == "cuda:0" and tags.device_of(t) == "cpu"
    assert moved.untyped_storage().is_cuda


# --------------------------------------------------------------------------- more of what scripts do


def test_ops_in_threads_are_simulated_too(sim):
    import queue
    import threading

    results: queue.Queue = queue.Queue()

    def prefetch():
        results.put(torch.randn(2).cuda() * 2)

    worker = threading.Thread(target=prefetch)
    worker.start()
    worker.join()
    assert on_gpu(results.get())


def test_int_devices_generators_and_legacy_spellings(sim):
    assert on_gpu(torch.randn(2).to(0))
    assert on_gpu(nn.Linear(2, 2).to(0).weight)
    generator = torch.Generator(device="cuda").manual_seed(1)
    assert isinstance(generator, torch.Generator) and generator.device.type == "cuda"
    assert on_gpu(torch.randn(2, device="cuda", generator=generator))
    assert isinstance(torch.default_generator, torch.Generator)
    torch.cuda.nvtx.range_push("step")
    torch.cuda.nvtx.range_pop()
    event = torch.cuda.Event(enable_timing=True)
    event.record()
    assert torch.cuda.current_stream().query()


def test_set_default_tensor_type_cuda(sim):
    torch.set_default_tensor_type("torch.cuda.FloatTensor")
    try:
        assert on_gpu(torch.zeros(2))
    finally:
        torch.set_default_device(None)


def test_torch_compile_runs_eagerly(sim):
    model = torch.compile(nn.Linear(3, 2).cuda())
    assert on_gpu(model(torch.randn(1, 3).cuda()))

    @torch.compile(mode="reduce-overhead")
    def double(x):
        return x * 2

    assert on_gpu(double(torch.ones(2, device="cuda")))


def test_cuda_in_a_forked_loader_worker(sim):
    from torch.utils.data import DataLoader

    def collate(samples):
        return torch.stack([x for x, _ in samples]).cuda()

    nn.Linear(2, 2).cuda()  # CUDA starts in the parent, before the workers are forked
    with pytest.raises(RuntimeError, match="Cannot re-initialize CUDA in forked subprocess"):
        next(iter(DataLoader(_dataset(), batch_size=4, collate_fn=collate, num_workers=1)))


def test_pinning_a_gpu_batch(sim):
    from torch.utils.data import DataLoader

    def collate(samples):
        return torch.stack([x for x, _ in samples]).cuda()

    with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
        next(iter(DataLoader(_dataset(), batch_size=4, collate_fn=collate, pin_memory=True)))


def test_ctc_loss_accepts_cpu_targets_and_lengths(sim):
    steps, batch, classes, length = 10, 2, 5, 4
    raw = torch.randn(steps, batch, classes, device="cuda", requires_grad=True)
    targets = torch.randint(1, classes, (batch, length))
    input_lengths = torch.full((batch,), steps, dtype=torch.long)
    target_lengths = torch.full((batch,), length, dtype=torch.long)
    loss = nn.CTCLoss()(raw.log_softmax(2), targets, input_lengths, target_lengths)
    loss.backward()
    assert on_gpu(loss) and on_gpu(raw.grad)
