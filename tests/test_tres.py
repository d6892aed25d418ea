"""TRES strings unpacked into the PM100 numeric features."""

import polars as pl

from wattsched.dataset.tres import unpack_tres


def test_tres_strings() -> None:
    jobs = pl.DataFrame(
        {
            "tres_req_str": ["cpu=32,mem=256G,node=1,billing=32,gres/gpu=4", "cpu=8,node=2", None, "mem=512,cpu=4"],
            "tres_alloc_str": [
                "cpu=128,mem=237G,node=1,gres/gpu:v100=4",
                "cpu=8,mem=1.5T,node=2,gres/gpu=0",
                "",
                "cpu=4,mem=2048K,node=1",
            ],
        }
    )
    out = unpack_tres(jobs)
    assert out["num_nodes_req"].to_list() == [1, 2, None, None]
    assert out["num_cores_req"].to_list() == [32, 8, None, 4]
    assert out["num_gpus_req"].to_list() == [4, None, None, None]
    assert out["mem_req"].to_list() == [262_144.0, None, None, 512.0]
    assert out["num_gpus_alloc"].to_list() == [4, 0, None, None]
    assert out["mem_alloc"].to_list() == [237 * 1024.0, 1.5 * 1024**2, None, 2.0]
    assert out["num_cores_alloc"].to_list() == [128, 8, None, 4]
