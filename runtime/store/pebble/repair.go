package pebble

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// RepairResult says what Repair did.
type RepairResult struct {
	Backup  string   `json:"backup"`  // where the store's files were copied first
	Actions []string `json:"actions"` // what was changed, one line each
	Report  *Report  `json:"report"`  // Check after the repair
}

// Repair makes the store in dir one that Check accepts, when the damage is
// of a kind it can repair: a missing marker is recreated, a damaged or
// missing OPTIONS file rewritten, a WAL cut at its first bad record (the
// records after it are dropped), a stale seal or mark dropped. It first
// copies every file of the store to dir.repair-<time> and says where; what
// it drops stays there. Damage to a table or the MANIFEST, and ledger or
// chain problems, are not repairable here: Repair says so and changes
// nothing beyond the copy.
func Repair(ctx context.Context, dir string, now time.Time) (*RepairResult, error) {
	rep, err := Check(ctx, dir)
	if err != nil {
		return nil, err
	}
	res := &RepairResult{Report: rep}
	if rep.OK() {
		return res, nil
	}
	var unfixable []string
	for _, p := range rep.Problems {
		if !repairable(dir, p) {
			unfixable = append(unfixable, p.String())
		}
	}
	if len(unfixable) > 0 {
		return res, fmt.Errorf("repair store %s: cannot repair %s: restore a backup (nothing was changed)", dir, strings.Join(unfixable, "; "))
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, fmt.Errorf("repair store: %w", err)
	}
	res.Backup, err = backupDir(dir, now)
	if err == nil {
		err = backup(dir, res.Backup)
	}
	if err == nil {
		err = fix(dir, rep.Problems, res)
	}
	if err == nil {
		err = breakSeal(dir)
	}
	if err := errors.Join(err, unlockDir(dir, lock)); err != nil {
		return res, fmt.Errorf("repair store %s (the files before repair are in %s): %w", dir, res.Backup, err)
	}
	// Let the engine replay and settle what is left, then check again.
	s, err := Open(dir, nil)
	if err != nil {
		return res, fmt.Errorf("repair store %s (the files before repair are in %s): %w", dir, res.Backup, err)
	}
	if err := s.Close(); err != nil {
		return res, fmt.Errorf("repair store %s: %w", dir, err)
	}
	if res.Report, err = Check(ctx, dir); err != nil {
		return res, err
	}
	return res, nil
}

// repairable reports whether fix knows what to do with a problem.
func repairable(dir string, p Problem) bool {
	switch k := classify(p.File); {
	case p.File == "marker.manifest.*", p.File == "marker.format-version.*", p.File == "OPTIONS-*":
		return true
	case k == kindOptions, k == kindLog, k == kindSeal, k == kindMark:
		return true
	case k == kindManifest: // a bad record after the first: cut there
		off, err := manifestDamage(filepath.Join(dir, p.File))
		return err == nil && off > 0 && strings.Contains(p.What, "is damaged or cut")
	}
	return false
}

func fix(dir string, problems []Problem, res *RepairResult) error {
	did := func(format string, args ...any) { res.Actions = append(res.Actions, fmt.Sprintf(format, args...)) }
	names, err := storeNames(dir)
	if err != nil {
		return err
	}
	done := map[string]bool{}
	for _, p := range problems {
		if done[p.File] {
			continue
		}
		done[p.File] = true
		switch k := classify(p.File); {
		case p.File == "marker.manifest.*":
			var manifests []string
			for _, n := range names {
				if classify(n) == kindManifest {
					manifests = append(manifests, n)
				}
			}
			if len(manifests) == 0 {
				return fmt.Errorf("no MANIFEST to point the marker at")
			}
			m := slices.MaxFunc(manifests, func(a, b string) int { return strings.Compare(a, b) })
			name := "marker.manifest.000001." + m
			if err := writeSynced(filepath.Join(dir, name), nil); err != nil {
				return err
			}
			did("created %s", name)
		case p.File == "marker.format-version.*":
			name := fmt.Sprintf("marker.format-version.000001.%03d", formatVersion)
			if err := writeSynced(filepath.Join(dir, name), nil); err != nil {
				return err
			}
			did("created %s", name)
		case p.File == "OPTIONS-*" || k == kindOptions:
			if done["options"] {
				continue
			}
			done["options"] = true
			for _, n := range names {
				if classify(n) == kindOptions {
					if err := os.Remove(filepath.Join(dir, n)); err != nil {
						return err
					}
					did("removed %s", n)
				}
			}
			o := engineOptions()
			o.EnsureDefaults()
			name := "OPTIONS-000000"
			if err := writeSynced(filepath.Join(dir, name), []byte(o.String())); err != nil {
				return err
			}
			did("wrote %s with the default options", name)
		case k == kindLog:
			path := filepath.Join(dir, p.File)
			data, err := os.ReadFile(path)
			if err != nil {
				did("%s is missing: its records are lost", p.File)
				continue
			}
			num, _ := walLogNum(p.File)
			if f := scanWAL(data, num); f.bad >= 0 {
				if err := os.Truncate(path, int64(f.bad)); err != nil {
					return err
				}
				did("cut %s at offset %d (its first bad record): %d bytes dropped", p.File, f.bad, len(data)-f.bad)
			} else {
				did("accepted %s as it is (%d bytes)", p.File, len(data))
			}
		case k == kindManifest:
			path := filepath.Join(dir, p.File)
			off, err := manifestDamage(path)
			if err != nil {
				return err
			}
			if off >= 0 {
				fi, err := os.Stat(path)
				if err != nil {
					return err
				}
				if err := os.Truncate(path, off); err != nil {
					return err
				}
				did("cut %s at offset %d (its first bad record): %d bytes dropped", p.File, off, fi.Size()-off)
			}
		case k == kindSeal, k == kindMark:
			did("dropped the stale %s", p.File)
		}
	}
	return syncDir(dir)
}

// storeNames lists the regular files of dir.
func storeNames(dir string) ([]string, error) {
	es, err := files(dir, func(e os.DirEntry) bool { return e.Type().IsRegular() })
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.Name()
	}
	return names, err
}

// backupDir picks DIR.repair-<time>, with a counter when that exists.
func backupDir(dir string, now time.Time) (string, error) {
	base := fmt.Sprintf("%s.repair-%s", filepath.Clean(dir), now.UTC().Format("20060102T150405Z"))
	for i := 1; i < 1000; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		if _, err := os.Lstat(name); errors.Is(err, os.ErrNotExist) {
			return name, nil
		}
	}
	return "", fmt.Errorf("back up the store: %s-* all exist", base)
}

// backup copies the store's regular files (not sub-directories, not the
// lock) to dst, synced.
func backup(dir, dst string) error {
	if err := os.Mkdir(dst, 0o755); err != nil {
		return fmt.Errorf("back up the store: %w", err)
	}
	names, err := storeNames(dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		if k := classify(n); k == kindLock || k == kindOwner {
			continue
		}
		if err := copyFile(filepath.Join(dir, n), filepath.Join(dst, n)); err != nil {
			return fmt.Errorf("back up the store: %w", err)
		}
	}
	return syncDir(dst)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Sync(), out.Close())
}
