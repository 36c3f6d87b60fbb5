"""A handler for the real service's Python worker library, runnable against the local service:

    pip install runpod
    RUNPODKIT_API_KEYS=dev-key npm run serve -- --port 8080 \
        --handler acme/py-echo="python3 '$PWD/examples/handlers/python/handler.py'"

(from the repository's root; from a project that installed runpodkit, `npx runpodkit serve ...` with
this file's path there)

then a template with imageName acme/py-echo and an endpoint on it. The service starts it with the
same RUNPOD_WEBHOOK_* environment the real platform sets, in the worker's own directory (hence the
absolute path).
"""
import runpod


def handler(job):
    text = job["input"].get("text", "")
    runpod.serverless.progress_update(job, {"received": len(text)})
    return {"text": text[::-1]}


runpod.serverless.start({"handler": handler})
