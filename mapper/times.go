package mapper

import (
	"strconv"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
)

// Time formats (config.Column.Format, time.format): the plan hands each to the codec with its field
// (codec.TimeFormat), which converts the value; explain says which format read a value.

// timeFormat is the codec's form of a configured time format (config.ParseTimeFormat) for typ
// (timestamp, date, or event for the event time).
func timeFormat(format, zone, typ string) (codec.TimeFormat, error) {
	f, err := config.ParseTimeFormat(format, zone, typ)
	if err != nil {
		return codec.TimeFormat{}, err
	}
	tf := codec.TimeFormat{Name: format, Unit: f.Unit, Layout: f.Layout, Zone: f.Zone}
	switch {
	case f.Layout != "":
		tf.Form = codec.TimeLayout
	case f.Named == config.TimeFormatRFC3339:
		tf.Form = codec.TimeRFC3339
	case f.Named != "":
		tf.Form, tf.Name = codec.TimeUnix, f.Named
	}
	return tf, nil
}

// formatNote says how a value in format tf was read, for explain; "" for a column's default format
// and the event time's rfc3339.
func formatNote(tf *codec.TimeFormat) string {
	switch tf.Form {
	case codec.TimeUnix:
		return "read as " + tf.Name
	case codec.TimeLayout:
		note := "read in layout " + strconv.Quote(tf.Layout)
		if tf.Zone != nil {
			note += " in zone " + tf.Zone.String()
		}
		return note
	}
	return ""
}
