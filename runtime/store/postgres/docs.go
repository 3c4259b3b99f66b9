package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentc/agentc/runtime/store"
)

// ApplyDocs implements store.Docs: the ops run in one transaction, in key
// order (so two batches never wait on each other in a cycle). A put with
// IfAbsent is an INSERT … ON CONFLICT DO NOTHING: a concurrent insert of the
// same key waits for the other transaction and then finds the key, so
// exactly one of them wins.
func (s *Store) ApplyDocs(ctx context.Context, ops ...store.DocOp) error {
	return store.Op0(ctx, &s.gate, store.Wrapf(store.CheckDocOps(ops), "apply docs"), func() error {
		if len(ops) == 0 {
			return nil
		}
		sorted := slices.Clone(ops)
		slices.SortFunc(sorted, func(a, b store.DocOp) int { return cmp.Or(cmp.Compare(a.Coll, b.Coll), cmp.Compare(a.Key, b.Key)) })
		err := s.tx(ctx, func(tx pgx.Tx) error {
			b := &pgx.Batch{}
			for _, op := range sorted {
				value := op.Value
				if value == nil {
					value = []byte{}
				}
				switch {
				case op.Delete:
					b.Queue(`DELETE FROM docs WHERE coll = $1 AND key = $2`, bs(op.Coll), bs(op.Key))
				case op.IfAbsent:
					b.Queue(`INSERT INTO docs (coll, key, value) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, bs(op.Coll), bs(op.Key), value).
						Exec(func(tag pgconn.CommandTag) error {
							if tag.RowsAffected() == 0 {
								return fmt.Errorf("%s/%q: %w", op.Coll, op.Key, store.ErrDocExists)
							}
							return nil
						})
				default:
					b.Queue(`INSERT INTO docs (coll, key, value) VALUES ($1, $2, $3) ON CONFLICT (coll, key) DO UPDATE SET value = excluded.value`,
						bs(op.Coll), bs(op.Key), value)
				}
			}
			return tx.SendBatch(ctx, b).Close()
		})
		if err != nil {
			return fmt.Errorf("apply docs: %w", err)
		}
		return nil
	})
}

// GetDoc implements store.Docs.
func (s *Store) GetDoc(ctx context.Context, coll, key string) ([]byte, error) {
	return store.Op(ctx, &s.gate, nil, func() ([]byte, error) {
		var v []byte
		err := s.pool.QueryRow(ctx, `SELECT value FROM docs WHERE coll = $1 AND key = $2`, bs(coll), bs(key)).Scan(&v)
		if errNoRows(err) {
			return nil, fmt.Errorf("get doc %s/%q: %w", coll, key, store.ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("get doc %s/%q: %w", coll, key, err)
		}
		return v, nil
	})
}

// ListDocs implements store.Docs. Keys are bytea, so they sort bytewise as
// Go strings do, and a prefix is the range [prefix, PrefixEnd(prefix)).
func (s *Store) ListDocs(ctx context.Context, coll, prefix, after string, limit int) ([]store.Doc, error) {
	return store.Op(ctx, &s.gate, store.Wrapf(store.CheckName("collection", coll), "list docs"), func() ([]store.Doc, error) {
		rows, err := s.pool.Query(ctx, `SELECT key, value FROM docs
			WHERE coll = $1 AND key >= $2 AND ($3::bytea IS NULL OR key < $3) AND key > $4
			ORDER BY key LIMIT $5`,
			bs(coll), bs(prefix), store.PrefixEnd([]byte(prefix)), bs(after), limitArg(limit))
		if err != nil {
			return nil, fmt.Errorf("list docs %s/%q: %w", coll, prefix, err)
		}
		ds, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Doc, error) {
			var (
				key []byte
				d   store.Doc
			)
			err := row.Scan(&key, &d.Value)
			d.Key = string(key)
			return d, err
		})
		if err != nil {
			return nil, fmt.Errorf("list docs %s/%q: %w", coll, prefix, err)
		}
		return ds, nil
	})
}
