"""The formal proofs that finish within a minute each hold on the RTL, and each fails on every
one of its mutants (an RTL edit that breaks a property it states) that it fails on within a
minute: a proof that a mutant survives proves less than it says. The longer proofs and mutants
run in `make formal` (docs/formal.md)."""

import pytest

from tb import formal

QUICK = [proof for proof in formal.PROOFS if proof.quick]


@pytest.mark.parametrize("proof", QUICK, ids=lambda proof: proof.name)
def test_proof_holds(proof):
    status, seconds, folder = formal.run(proof)
    assert status == "PASS", f"{proof.name}: {status} after {seconds:.0f} s, see {folder}"


@pytest.mark.parametrize("proof, mutant",
                         [(proof, mutant) for proof in QUICK for mutant in proof.mutants
                          if mutant.quick],
                         ids=lambda value: getattr(value, "name", "").replace(" ", "_"))
def test_mutant_is_caught(proof, mutant):
    status, seconds, folder = formal.run(proof, mutant)
    assert status == "FAIL", \
        f"{proof.name} survives '{mutant.name}': {status} after {seconds:.0f} s, see {folder}"
