"""`harness check` plays the gateway's faces: every story a face can express, through the
face's official SDK on an in-process transport, over the real engine and the fakes.

    clients.py    the three faces as their SDKs call them; the in-process wire
    stage.py      one story's world: the ASGI app, engine, worker, fakes, history
    stories.py    the stories and what the client must receive in each
    run.py        each story through each face, judged by the story and the checker
"""
