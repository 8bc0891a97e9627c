import pytest

from bringup_vllm import faults


def test_no_fault_is_on_unless_named(monkeypatch):
    monkeypatch.delenv("BRINGUP_VLLM_FAULT", raising=False)
    assert not faults.active("rope-pairing")
    monkeypatch.setenv("BRINGUP_VLLM_FAULT", "rope-pairing")
    assert faults.active("rope-pairing")


def test_an_unknown_fault_is_refused_by_name(monkeypatch):
    monkeypatch.setenv("BRINGUP_VLLM_FAULT", "rope-pairing,typo")
    with pytest.raises(ValueError, match="typo"):
        faults.active("rope-pairing")
