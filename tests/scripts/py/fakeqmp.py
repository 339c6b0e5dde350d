"""A stand-in QEMU QMP socket for the unit tests: answers the commands the
scripts send from a table, records them."""
import json
import os
import socket
import threading


class FakeQMP:
    def __init__(self, path, answers):
        """answers: command name -> reply dict, or a callable(args) giving it."""
        self.path, self.answers, self.seen = path, answers, []
        self.srv = socket.socket(socket.AF_UNIX)
        self.srv.bind(path)
        self.srv.listen(4)
        self.stop = False
        self.t = threading.Thread(target=self.serve, daemon=True)
        self.t.start()

    def serve(self):
        while not self.stop:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            threading.Thread(target=self.client, args=(c,), daemon=True).start()

    def client(self, c):
        f = c.makefile("rw")
        f.write(json.dumps({"QMP": {"version": {}, "capabilities": []}}) + "\n")
        f.flush()
        for line in f:
            m = json.loads(line)
            name = m["execute"]
            self.seen.append((name, m.get("arguments")))
            a = self.answers.get(name, {"return": {}})
            r = a(m.get("arguments")) if callable(a) else a
            f.write(json.dumps(r) + "\n")
            f.flush()
        c.close()

    def close(self):
        self.stop = True
        self.srv.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass
