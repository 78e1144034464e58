package index

// eachRow calls fn for each of rows (sql.Rows or sqlx.Rows), then closes them.
func eachRow[R interface {
	Next() bool
	Err() error
	Close() error
}](rows R, fn func(R) error) error {
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
