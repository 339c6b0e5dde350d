"""build-initramfs.sh: the update-alternatives links the packages' postinst
scripts would make, highest priority first (the guest image runs no postinst).

  alternatives.py ROOT CONTROL-DIR
"""
import glob, os, shlex, sys


def main(argv=None):
    argv = sys.argv if argv is None else argv
    root, ctl = argv[1:3]
    best = {}            # alternative name -> (priority, [(link, path)...])
    for f in sorted(glob.glob(os.path.join(ctl, "*.postinst"))):
        text = open(f, errors="replace").read().replace("\\\n", " ")
        for line in text.splitlines():
            if "update-alternatives" not in line or "--install" not in line or "$" in line:
                continue
            try:
                w = shlex.split(line, comments=True)
            except ValueError:
                continue
            i, group, prio = 0, [], None
            while i < len(w):
                if w[i] == "--install" and i + 4 < len(w):
                    group.append((w[i + 1], w[i + 3])); name = w[i + 2]
                    try:
                        prio = int(w[i + 4])
                    except ValueError:
                        prio = 0
                    i += 5
                elif w[i] == "--slave" and i + 3 < len(w):
                    group.append((w[i + 1], w[i + 3])); i += 4
                else:
                    i += 1
            if group and prio is not None and (name not in best or prio > best[name][0]):
                best[name] = (prio, group)
    for name, (prio, group) in sorted(best.items()):
        for link, path in group:
            dst, src = root + link, root + path
            if os.path.lexists(src) and not os.path.lexists(dst):
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                os.symlink(path, dst)


if __name__ == "__main__":
    main()
