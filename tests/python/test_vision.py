"""Vision tables as 2-D grids against torch.nn.functional.interpolate (timm's recipe), MAE's
2-D sin-cos table against its numpy code, and checkpoint folders from Python."""
import json
import os

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import posemb


def torch_resize(table, prefix, src, dst, mode):
    """timm resample_abs_pos_embed: the prefix kept, the grid through interpolate in float32."""
    t = torch.from_numpy(np.ascontiguousarray(table, dtype=np.float32))[None]
    pre, grid = t[:, :prefix], t[:, prefix:]
    c = t.shape[-1]
    grid = grid.reshape(1, src[0], src[1], c).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, size=dst, mode=mode, align_corners=False)
    grid = grid.permute(0, 2, 3, 1).reshape(1, dst[0] * dst[1], c)
    return torch.cat([pre, grid], dim=1)[0].numpy()


@pytest.mark.parametrize("mode", ["bicubic", "bilinear"])
@pytest.mark.parametrize("src,dst", [((4, 4), (7, 7)), ((7, 7), (3, 3)), ((3, 5), (6, 4))])
@pytest.mark.parametrize("prefix", [1, 2])
def test_resize_grid_equals_torch_interpolate(rng, mode, src, dst, prefix):
    values = rng.standard_normal((prefix + src[0] * src[1], 8)).astype(np.float32)
    table = posemb.PositionTable(values, source_tensor="pos_embed")
    from_grid = None if src[0] == src[1] else src
    r = posemb.resize_grid(table, dst, mode, prefix_tokens=prefix, from_grid=from_grid)
    want = torch_resize(values, prefix, src, dst, mode)
    assert r.values.shape == want.shape
    assert r.values[:prefix].tobytes() == values[:prefix].tobytes()  # bit for bit
    np.testing.assert_allclose(r.values, want, rtol=0, atol=1e-5)
    assert r.reserved_rows == prefix


def test_interpolate_grid_and_layouts(rng):
    g = rng.standard_normal((12, 3)).astype(np.float32)
    out = posemb.interpolate_grid(g, (3, 4), (5, 2), "bilinear")
    np.testing.assert_allclose(out, torch_resize(g, 0, (3, 4), (5, 2), "bilinear"), atol=1e-5)
    vit = posemb.PositionTable(rng.standard_normal((197, 4)).astype(np.float32),
                               source_tensor="vit.embeddings.position_embeddings")
    clip = posemb.PositionTable(rng.standard_normal((50, 4)).astype(np.float32),
                                source_tensor="vision_model.embeddings.position_embedding.weight")
    assert posemb.vision_layout(clip)[:2] == (1, (7, 7))
    with pytest.raises(ValueError, match="1-D"):
        gpt = posemb.PositionTable(vit.values, source_tensor="wpe.weight")
        posemb.vision_layout(gpt)
    with pytest.raises(ValueError, match="prefix-tokens 1"):
        posemb.vision_layout(vit, prefix_tokens=2)
    with pytest.raises(ValueError):
        posemb.interpolate_grid(g, (3, 3), (2, 2))


def mae_sincos(h, w, dim, cls):
    def one(d, pos):
        omega = np.arange(d // 2, dtype=np.float64) / (d / 2.0)
        omega = 1.0 / 10000 ** omega
        out = np.einsum("m,d->md", pos.reshape(-1), omega)
        return np.concatenate([np.sin(out), np.cos(out)], axis=1)
    grid = np.stack(np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32)), 0)
    pe = np.concatenate([one(dim // 2, grid[0]), one(dim // 2, grid[1])], axis=1)
    if cls:
        pe = np.concatenate([np.zeros([1, dim]), pe], axis=0)
    return pe.astype(np.float32)


@pytest.mark.parametrize("h,w,dim,cls", [(14, 14, 32, True), (3, 5, 8, False)])
def test_sincos_2d_is_maes_table(h, w, dim, cls):
    np.testing.assert_allclose(posemb.sincos_2d_position_table(h, w, dim, cls),
                               mae_sincos(h, w, dim, cls), rtol=0, atol=1.2e-7)


def write_st(path, tensors):
    h, off, data = {}, 0, b""
    for k, a in tensors.items():
        b = np.ascontiguousarray(a, dtype="<f4").tobytes()
        h[k] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        data += b
    hb = json.dumps(h).encode()
    with open(path, "wb") as f:
        f.write(len(hb).to_bytes(8, "little") + hb + data)


def test_vit_folder_resized_to_24x24_has_image_size_384(tmp_path, rng):
    d = tmp_path / "vit"
    d.mkdir()
    table = rng.standard_normal((1, 197, 8)).astype(np.float32)
    write_st(d / "model.safetensors", {"vit.embeddings.cls_token": rng.standard_normal((1, 1, 8)),
                                       "vit.embeddings.position_embeddings": table})
    (d / "config.json").write_text(json.dumps({"model_type": "vit", "image_size": 224,
                                               "patch_size": 16}))
    (d / "preprocessor_config.json").write_text('{"size": 224}')
    f = posemb.read_checkpoint_folder(str(d))
    assert f.table_tensor == "vit.embeddings.position_embeddings"
    assert f.check_config()["agrees"]
    t = f.table()
    big = posemb.resize_grid(t, (24, 24), file=f.file)
    report = posemb.write_checkpoint_folder(f, big, str(tmp_path / "vit384"), grid=(24, 24))
    assert report["config_changes"] == {"image_size": ("224", "384")}
    assert json.loads((tmp_path / "vit384" / "config.json").read_text())["image_size"] == 384
    assert (tmp_path / "vit384" / "preprocessor_config.json").read_text() == '{"size": 224}'
    out = posemb.read_safetensors(str(tmp_path / "vit384" / "model.safetensors"))
    pe = out["vit.embeddings.position_embeddings"]
    assert pe.shape == (1, 577, 8)
    np.testing.assert_allclose(pe[0], torch_resize(table[0], 1, (14, 14), (24, 24), "bicubic"),
                               atol=1e-5)
    g = posemb.read_checkpoint_folder(str(tmp_path / "vit384"))
    assert g.check_config()["agrees"]
    with pytest.raises(ValueError, match="--force"):
        posemb.write_checkpoint_folder(f, big, str(tmp_path / "vit384"), grid=(24, 24))


def test_hostile_folder_raises_file_format_error(tmp_path, rng):
    d = tmp_path / "m"
    d.mkdir()
    write_st(d / "a.safetensors", {"wpe.weight": rng.standard_normal((4, 4))})
    (d / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"wpe.weight": "../a.safetensors"}}))
    (d / "config.json").write_text("{}")
    with pytest.raises(posemb.FileFormatError, match="plain file name"):
        posemb.read_checkpoint_folder(str(d))
    assert sorted(os.listdir(d)) == ["a.safetensors", "config.json", "model.safetensors.index.json"]
