// Volunteers' hours in words, the pure part (no DOM, tested by tests/js/hours.test.js): the
// dashboard's and the new-campaign preview's figures, said as `mtcjudge campaign status` says
// them (mtcjudge.cli.campaign_status.hours_text and hours_span).

/** Hours as a person reads them: seconds under a minute, minutes under an hour; "—" for none. */
export function formatHours(hours) {
  if (hours === null || hours === undefined) return "—";
  if (hours < 1 / 60) return `${Math.round(hours * 3600)} s`;
  return hours < 1 ? `${Math.round(hours * 60)} min` : `${hours.toFixed(1)} h`;
}

/** An interval of hours: "9.5–22.0 h", "40 min to 1.2 h", "21.0 h or more" (no upper end). */
export function formatHoursSpan(low, high) {
  if (high === null || high === undefined) return `${formatHours(low)} or more`;
  const [lowNumber, lowUnit] = formatHours(low).split(" ");
  const [highNumber, highUnit] = formatHours(high).split(" ");
  if (lowUnit === highUnit) return `${lowNumber}–${highNumber} ${highUnit}`;
  return `${formatHours(low)} to ${formatHours(high)}`;
}
