# Sourced by every device script that benches flash_attn_fwd: FA3 installed from the wheel carried in
# .whl/ (fa3-fwd; `pip download --no-deps fa3-fwd==0.0.3 -d .whl` here, `carry: [".whl"]` in the call),
# so the anchor is timed beside cuDNN, with any other carried wheel (nvidia-ml-py for the clock record).
# Without the FA3 wheel the run goes on and its results say "FA3 not installed" beside the geomean.
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/ks-wheels .whl/*.whl \
    && export PYTHONPATH=/tmp/ks-wheels${PYTHONPATH:+:$PYTHONPATH}
fi
compgen -G ".whl/fa3_fwd-*.whl" > /dev/null || echo "with_fa3.sh: no .whl/fa3_fwd-*.whl carried: FA3 will not be timed" >&2
