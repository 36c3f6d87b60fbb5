"""A handler for the real service's Python worker library, runnable against the local service:

    runpodkit serve --handler acme/py-echo="python3 examples/handlers/python/handler.py"

The service starts it with the same RUNPOD_WEBHOOK_* environment the real platform sets.
"""
import runpod


def handler(job):
    text = job["input"].get("text", "")
    runpod.serverless.progress_update(job, {"received": len(text)})
    return {"text": text[::-1]}


runpod.serverless.start({"handler": handler})
