#!/usr/bin/env python3
"""Requests to a cluster's job server that carry the job id but no token
(tests/cluster/cluster-test.sh): prints "STATUS PATH" for each.

Usage: forge-requests.py HTTP_PORT JOB_ID
"""
import sys, urllib.request, urllib.error
port, job = sys.argv[1:3]
for path in ("/ranks?job=%s&node=0" % job, "/cmd/node0.sh", "/pmi/abort?job=%s&rank=0&code=1&msg=x" % job,
             "/pmi/barrier?job=%s&rank=0&size=1&epoch=1" % job, "/join?job=%s&node=0&lid=9&link=3" % job):
    try:
        code = urllib.request.urlopen("http://127.0.0.1:%s%s" % (port, path), timeout=10).status
    except urllib.error.HTTPError as e:
        code = e.code
    except OSError as e:
        code = repr(e)
    print(code, path.split("?")[0])
