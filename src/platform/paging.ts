/** The paged wrapper every list answers with (`PagedModel*`). */
export interface Page<T> {
  items: T[];
  pageSize: number;
  currentPage: number;
  totalItems: number;
  totalPages: number;
}

export function page<T>(items: T[], total: number, pageSize: number, currentPage: number): Page<T> {
  return { items, pageSize, currentPage, totalItems: total, totalPages: Math.ceil(total / pageSize) };
}
